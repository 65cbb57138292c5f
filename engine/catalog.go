package engine

import (
	"slices"
	"strconv"
)

// Capability is one operation an agent exposes. Returns lists the fields of
// response.data the capability produces; empty means "not declared", and references
// into its result are then not checked field by field.
type Capability struct {
	Name    string   `json:"name"`
	Returns []string `json:"returns,omitempty"`
}

// CatalogAgent is an agent, identified by namespace and name, and its capabilities.
type CatalogAgent struct {
	Namespace    string       `json:"namespace"`
	Agent        string       `json:"agent"`
	Capabilities []Capability `json:"capabilities"`
}

// Catalog is the compiled, immutable set of agents and capabilities that ValidatePlan
// checks plans against (docs/semantics.md §2.2, §2.3 and the returns part of §2.7). Build it
// with NewCatalog; it is safe for concurrent use.
//
// A nil *Catalog is valid and means "no catalog": ValidatePlan then skips the catalog
// rules, and the lookup methods report nothing found. An empty non-nil catalog is
// different: it knows no agent, so every step fails rule 2.
type Catalog struct {
	agents []CatalogAgent // in input order; never shared with callers
	index  map[catalogKey]catalogEntry
}

type catalogKey struct{ namespace, agent string }

type catalogEntry struct {
	agent int            // index into Catalog.agents
	caps  map[string]int // capability name -> index into that agent's Capabilities
}

// CatalogReason names what is wrong with a catalog entry; the values are stable codes.
type CatalogReason string

// Catalog error reasons.
const (
	CatalogEmptyNamespace       CatalogReason = "empty_namespace"
	CatalogEmptyAgent           CatalogReason = "empty_agent"
	CatalogDuplicateAgent       CatalogReason = "duplicate_agent"
	CatalogEmptyCapability      CatalogReason = "empty_capability"
	CatalogDuplicateCapability  CatalogReason = "duplicate_capability"
	CatalogEmptyReturnField     CatalogReason = "empty_return_field"
	CatalogDuplicateReturnField CatalogReason = "duplicate_return_field"
)

// CatalogError reports an invalid NewCatalog input. Index is the zero-based position of
// the offending agent in the input. Name is the offending capability or return field
// (or namespace/agent for CatalogDuplicateAgent), empty when not applicable.
type CatalogError struct {
	Index  int
	Reason CatalogReason
	Name   string
}

func (e *CatalogError) Error() string {
	msg := "invalid catalog: agent " + strconv.Itoa(e.Index) + ": " + string(e.Reason)
	if e.Name != "" {
		msg += " " + strconv.Quote(e.Name)
	}
	return msg
}

// NewCatalog validates agents and compiles them into a Catalog. The input is copied
// deeply, so later changes to it have no effect. It returns the first problem found,
// in input order, as a *CatalogError: an empty namespace, agent, capability name or
// return field, an agent listed twice under the same namespace, or a capability or
// return field listed twice for one agent. An agent with no capabilities is allowed.
func NewCatalog(agents []CatalogAgent) (*Catalog, error) {
	c := &Catalog{
		agents: make([]CatalogAgent, 0, len(agents)),
		index:  make(map[catalogKey]catalogEntry, len(agents)),
	}
	for i, a := range agents {
		if err := checkCatalogAgent(i, a); err != nil {
			return nil, err
		}
		key := catalogKey{a.Namespace, a.Agent}
		if _, dup := c.index[key]; dup {
			return nil, &CatalogError{Index: i, Reason: CatalogDuplicateAgent, Name: a.Namespace + "/" + a.Agent}
		}
		caps := make(map[string]int, len(a.Capabilities))
		for j, cp := range a.Capabilities {
			caps[cp.Name] = j
		}
		c.index[key] = catalogEntry{agent: len(c.agents), caps: caps}
		c.agents = append(c.agents, cloneCatalogAgent(a))
	}
	return c, nil
}

func checkCatalogAgent(i int, a CatalogAgent) error {
	switch {
	case a.Namespace == "":
		return &CatalogError{Index: i, Reason: CatalogEmptyNamespace}
	case a.Agent == "":
		return &CatalogError{Index: i, Reason: CatalogEmptyAgent}
	}
	seen := make(map[string]bool, len(a.Capabilities))
	for _, cp := range a.Capabilities {
		if cp.Name == "" {
			return &CatalogError{Index: i, Reason: CatalogEmptyCapability}
		}
		if seen[cp.Name] {
			return &CatalogError{Index: i, Reason: CatalogDuplicateCapability, Name: cp.Name}
		}
		seen[cp.Name] = true
		for j, f := range cp.Returns {
			if f == "" {
				return &CatalogError{Index: i, Reason: CatalogEmptyReturnField, Name: cp.Name}
			}
			if slices.Contains(cp.Returns[:j], f) {
				return &CatalogError{Index: i, Reason: CatalogDuplicateReturnField, Name: f}
			}
		}
	}
	return nil
}

// Agent reports whether the catalog lists agent in namespace. It is false for a nil
// catalog.
func (c *Catalog) Agent(namespace, agent string) bool {
	if c == nil {
		return false
	}
	_, ok := c.index[catalogKey{namespace, agent}]
	return ok
}

// Agents returns a deep copy of the catalog's agents in the order they were given; nil
// for a nil catalog.
func (c *Catalog) Agents() []CatalogAgent {
	if c == nil {
		return nil
	}
	out := make([]CatalogAgent, len(c.agents))
	for i, a := range c.agents {
		out[i] = cloneCatalogAgent(a)
	}
	return out
}

// capability is the uncopied lookup the validator uses; callers must not modify the
// result.
func (c *Catalog) capability(namespace, agent, capability string) (*Capability, bool) {
	if c == nil {
		return nil, false
	}
	e, ok := c.index[catalogKey{namespace, agent}]
	if !ok {
		return nil, false
	}
	j, ok := e.caps[capability]
	if !ok {
		return nil, false
	}
	return &c.agents[e.agent].Capabilities[j], true
}

func cloneCatalogAgent(a CatalogAgent) CatalogAgent {
	if a.Capabilities != nil {
		caps := make([]Capability, len(a.Capabilities))
		for i, cp := range a.Capabilities {
			caps[i] = Capability{Name: cp.Name, Returns: slices.Clone(cp.Returns)}
		}
		a.Capabilities = caps
	}
	return a
}
