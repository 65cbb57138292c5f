package agentd.plan

import data.agentd.lib

deny contains "blocked" if {
	some step in input.plan.steps
	lib.blocked(step)
}
