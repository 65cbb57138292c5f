package agentd.plan

deny contains "unresolvable" if {
	some step in input.plan.steps
	count(net.lookup_ip_addr(step.namespace)) == 0
}
