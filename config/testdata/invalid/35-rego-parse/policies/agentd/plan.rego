package agentd.plan

deny contains msg if {
	some step in input.plan.steps
	msg := sprintf("step %s", [step.step_id]
}
