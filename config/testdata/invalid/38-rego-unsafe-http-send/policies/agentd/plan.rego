package agentd.plan

deny contains "remote_denied" if {
	resp := http.send({"method": "GET", "url": "https://policy.internal/check"})
	resp.status_code != 200
}
