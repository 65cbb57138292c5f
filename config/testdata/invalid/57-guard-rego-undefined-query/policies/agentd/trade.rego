package agentd.trade

deny contains "trade_limit" if input.call.parameters.amount > 10000
