package agentd.plan

deny contains msg if {
	msg := undefined_thing
}
