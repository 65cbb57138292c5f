// Package deploy is the root of agentd's deployment tools module: the programs that build
// the OCI image (cmd/agentd-image) and check the Kubernetes manifests and the Helm chart
// (cmd/deploy-check). It is a module of its own so that go-containerregistry, Helm and
// the Kubernetes API modules stay out of the daemon's go.mod.
package deploy
