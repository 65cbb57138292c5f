package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// stateDir is where agentd keeps its state in the image.
const stateDir = "/var/lib/agentd"

// checkManifest checks the Deployments that run agentd (those with a container named
// agentd). What every one must have:
//   - a readiness probe on /readyz and a liveness probe on /healthz;
//   - runAsNonRoot and the RuntimeDefault seccomp profile (on the pod or the container),
//     a read-only root filesystem, no privilege escalation, all capabilities dropped;
//   - resource requests and a memory limit;
//   - a volume mounted at /var/lib/agentd (the root filesystem is read-only), and
//     --data-dir=/var/lib/agentd among the arguments (the durable store's file there,
//     named rather than left to the working directory);
//   - with more than one replica, a shared store (--store=redis://… or from a variable):
//     replicas on their own stores would each keep part of the records.
func checkManifest(m Manifest) []*Problem {
	d, ok := m.Object.(*appsv1.Deployment)
	if !ok {
		return nil
	}
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "agentd" })
	if i < 0 {
		return nil
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pod, c := d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[i]
	if path := httpPath(c.ReadinessProbe); path != "/readyz" {
		fail("the readiness probe is not an HTTP GET of /readyz (%q)", path)
	}
	if path := httpPath(c.LivenessProbe); path != "/healthz" {
		fail("the liveness probe is not an HTTP GET of /healthz (%q)", path)
	}
	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	if !isTrue(csc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
		fail("runAsNonRoot is not set")
	}
	if !runtimeDefault(csc.SeccompProfile) && !runtimeDefault(psc.SeccompProfile) {
		fail("the seccomp profile is not RuntimeDefault")
	}
	if !isTrue(csc.ReadOnlyRootFilesystem) {
		fail("the root filesystem is not read-only")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		fail("allowPrivilegeEscalation is not false")
	}
	if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
		fail("the capabilities do not drop ALL")
	}
	if len(c.Resources.Requests) == 0 || c.Resources.Limits.Memory().IsZero() {
		fail("resource requests or the memory limit are missing")
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == stateDir && !v.ReadOnly }) {
		fail("no writable volume is mounted at %s", stateDir)
	}
	if !slices.Contains(c.Args, "--data-dir="+stateDir) {
		fail("the arguments do not pass --data-dir=%s", stateDir)
	}
	if d.Spec.Replicas != nil && *d.Spec.Replicas > 1 && !slices.ContainsFunc(c.Args, sharedStore) {
		fail("%d replicas without a shared store (--store=redis://…)", *d.Spec.Replicas)
	}
	if len(errs) == 0 {
		return nil
	}
	return []*Problem{{Source: m.Source, Object: m.name(), Kind: KindPolicy, Err: errors.Join(errs...)}}
}

func httpPath(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return ""
	}
	return p.HTTPGet.Path
}

func isTrue(b *bool) bool { return b != nil && *b }

func runtimeDefault(p *corev1.SeccompProfile) bool {
	return p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault
}

// sharedStore reports whether arg selects a store replicas share.
func sharedStore(arg string) bool {
	v, ok := strings.CutPrefix(arg, "--store=")
	return ok && (strings.HasPrefix(v, "redis://") || strings.HasPrefix(v, "rediss://") || strings.HasPrefix(v, "$("))
}
