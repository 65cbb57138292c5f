package agentd.lib

permitted(step) if step.namespace == "demo-tools"
