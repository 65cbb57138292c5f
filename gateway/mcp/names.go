package mcp

// qualifier joins a server name and a tool or prompt name in a qualified name.
const qualifier = "__"

// offer is one upstream's name for a tool or a prompt.
type offer struct {
	server string
	name   string
}

// listedNames names what the upstreams offer, given in configuration order: a name
// offered by one upstream is listed as is, a name offered by several is listed as
// "<server>__<name>" for each. A listed name that another offer already took (a
// qualified name equal to an upstream's own name) goes to the first offer in order;
// the later ones are returned as dropped.
func listedNames(offers []offer) (listed map[string]offer, dropped []offer) {
	count := make(map[string]int, len(offers))
	for _, o := range offers {
		count[o.name]++
	}
	listed = make(map[string]offer, len(offers))
	for _, o := range offers {
		name := o.name
		if count[o.name] > 1 {
			name = o.server + qualifier + o.name
		}
		if _, taken := listed[name]; taken {
			dropped = append(dropped, o)
			continue
		}
		listed[name] = o
	}
	return listed, dropped
}
