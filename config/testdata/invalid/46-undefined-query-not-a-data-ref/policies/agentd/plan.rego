package agentd.plan

deny contains "empty_plan" if count(input.plan.steps) == 0
