package agentd.plan

deny contains msg if {
	msg := sprintf("step %s is not allowed", [step_id])
}
