package deploy_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
)

// overlays are the directories a user applies with kubectl apply -k.
var overlays = []string{"overlays/example", "overlays/example-hpa"}

func renderOverlay(t *testing.T, dir string) manifests {
	t.Helper()
	objs, err := render(dir)
	if err != nil {
		t.Fatal(err)
	}
	k, err := readKustomization(dir)
	if err != nil {
		t.Fatal(err)
	}
	return manifests{namespace: k.Namespace, objs: objs}
}

// TestKustomizationsListEveryFile: a manifest file that no kustomization
// lists is never applied; that is always a mistake here.
func TestKustomizationsListEveryFile(t *testing.T) {
	t.Parallel()
	dirs := 0
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		files, err := yamlFiles(p)
		if err != nil {
			return err
		}
		k, err := readKustomization(p)
		if os.IsNotExist(err) {
			if len(files) > 0 {
				t.Errorf("%s holds manifests %v but no kustomization.yaml", p, files)
			}
			return nil
		}
		if err != nil {
			return err
		}
		dirs++
		listed := map[string]bool{}
		for _, r := range k.Resources {
			listed[r] = true
		}
		for _, pt := range k.Patches {
			listed[pt.Path] = true
		}
		for _, f := range files {
			if !listed[f] {
				t.Errorf("%s/%s is not listed in %s/kustomization.yaml", p, f, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dirs < 3 {
		t.Fatalf("found %d kustomizations, want base and the overlays", dirs)
	}
}

// TestRender renders the base and every overlay: each document decodes
// strictly into its API type, and no object is defined twice.
func TestRender(t *testing.T) {
	t.Parallel()
	for _, dir := range append([]string{"base"}, overlays...) {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			m := renderOverlay(t, dir)
			seen := map[string]object{}
			for _, o := range m.objs {
				id := o.gvk + " " + o.obj.GetNamespace() + "/" + o.obj.GetName()
				if prev, dup := seen[id]; dup {
					t.Errorf("%s defined twice: %s and %s", id, prev.source, o.source)
				}
				seen[id] = o
			}
			if len(m.objs) < 10 {
				t.Errorf("rendered %d objects, want the whole deployment", len(m.objs))
			}
		})
	}
}

// TestStrictDecoding makes sure the checker itself rejects the mistakes it
// exists to catch.
func TestStrictDecoding(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replica: 2}\n",
		"duplicate field": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nmetadata: {name: t}\n",
		"wrong type":      "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: seventy}]}\n",
		"unknown kind":    "apiVersion: v1\nkind: Pod2\nmetadata: {name: p}\n",
		"no name":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
	} {
		if _, err := decodeDoc([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if _, err := decodeDoc([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n")); err != nil {
		t.Errorf("valid Service: %v", err)
	}
}

func TestCrossReferences(t *testing.T) {
	t.Parallel()
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			m := renderOverlay(t, dir)
			t.Run("Namespace", func(t *testing.T) { checkNamespace(t, m) })
			t.Run("Workloads", func(t *testing.T) { checkWorkloads(t, m) })
			t.Run("Services", func(t *testing.T) { checkServices(t, m) })
			t.Run("ConfigAndSecrets", func(t *testing.T) { checkConfigRefs(t, m) })
			t.Run("Volumes", func(t *testing.T) { checkVolumes(t, m) })
			t.Run("ProbesAndPorts", func(t *testing.T) { checkProbes(t, m) })
			t.Run("Args", func(t *testing.T) { checkArgs(t, m) })
			t.Run("Hardening", func(t *testing.T) { checkHardening(t, m) })
			t.Run("NetworkPolicy", func(t *testing.T) { checkNetworkPolicies(t, m) })
			t.Run("Secrets", func(t *testing.T) { checkSecrets(t, m) })
			t.Run("Autoscaling", func(t *testing.T) { checkAutoscaling(t, m, dir) })
			t.Run("NATSCluster", func(t *testing.T) { checkNATSCluster(t, m) })
		})
	}
}

func checkNamespace(t *testing.T, m manifests) {
	if m.namespace == "" {
		t.Fatal("overlay sets no namespace")
	}
	if _, ok := find[*corev1.Namespace](m, m.namespace); !ok {
		t.Errorf("no Namespace %q in the overlay", m.namespace)
	}
	for _, o := range m.objs {
		if !clusterScoped[o.gvk] && o.obj.GetNamespace() != m.namespace {
			t.Errorf("%s in namespace %q, want %q", o, o.obj.GetNamespace(), m.namespace)
		}
	}
}

func selects(t *testing.T, sel *metav1.LabelSelector, lbls map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return !s.Empty() && s.Matches(labels.Set(lbls))
}

// podsSelectedBy returns the pod templates a selector matches.
func podsSelectedBy(t *testing.T, m manifests, sel *metav1.LabelSelector) []pod {
	t.Helper()
	var out []pod
	for _, p := range m.pods() {
		if selects(t, sel, p.labels) {
			out = append(out, p)
		}
	}
	return out
}

func checkWorkloads(t *testing.T, m manifests) {
	for _, p := range m.pods() {
		var sel *metav1.LabelSelector
		switch w := p.owner.obj.(type) {
		case *appsv1.Deployment:
			sel = w.Spec.Selector
		case *appsv1.StatefulSet:
			sel = w.Spec.Selector
			svc, ok := find[*corev1.Service](m, w.Spec.ServiceName)
			switch {
			case !ok:
				t.Errorf("%s: serviceName %q: no such Service", p, w.Spec.ServiceName)
			case svc.Spec.ClusterIP != corev1.ClusterIPNone:
				t.Errorf("%s: governing Service %q is not headless", p, svc.Name)
			case !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, p.labels):
				t.Errorf("%s: governing Service %q does not select its pods", p, svc.Name)
			}
		}
		if sel == nil || !selects(t, sel, p.labels) {
			t.Errorf("%s: selector %v does not match its template labels %v", p, sel, p.labels)
		}
		if p.labels["app.kubernetes.io/part-of"] != "skillfleet" {
			t.Errorf("%s: pod template lacks app.kubernetes.io/part-of=skillfleet", p)
		}
	}
	// The coordinator decides alone: one replica, a StatefulSet (never two
	// pods during a rollout), with its run directory on a claimed volume.
	sts, ok := find[*appsv1.StatefulSet](m, "coordinator")
	if !ok {
		t.Fatal("no coordinator StatefulSet")
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("coordinator replicas = %v, want 1", sts.Spec.Replicas)
	}
	out := flagValue(sts.Spec.Template.Spec.Containers[0].Args, "out")
	if mnt := mountFor(sts.Spec.Template.Spec.Containers[0], out); mnt == nil || !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == mnt.Name }) {
		t.Errorf("coordinator --out=%s is not on a volume claim template", out)
	}
	if _, ok := find[*appsv1.Deployment](m, "worker"); !ok {
		t.Error("no worker Deployment")
	}
}

// checkNATSCluster: NATS is a JetStream cluster of an odd number (three
// or more) of pods, started together, each routing to every pod by its
// name under the governing headless Service on a port that Service and
// the container declare, named after its pod; voluntary disruptions never
// take the quorum.
func checkNATSCluster(t *testing.T, m manifests) {
	sts, ok := find[*appsv1.StatefulSet](m, "nats")
	if !ok {
		t.Fatal("no nats StatefulSet")
	}
	n := int32(1)
	if sts.Spec.Replicas != nil {
		n = *sts.Spec.Replicas
	}
	if n < 3 || n%2 == 0 {
		t.Errorf("nats replicas = %d, want an odd number, at least 3 (a JetStream quorum that survives a lost node)", n)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("nats podManagementPolicy = %q, want Parallel: a node waits for its peers before it is ready", sts.Spec.PodManagementPolicy)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	podName := false
	for _, e := range c.Env {
		if e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = true
		}
	}
	cm, ok := find[*corev1.ConfigMap](m, "nats-config")
	if !ok {
		t.Fatal("no ConfigMap nats-config")
	}
	conf := cm.Data["nats.conf"]
	if !podName || !regexp.MustCompile(`(?m)^\s*server_name:\s*\$POD_NAME\s*$`).MatchString(conf) {
		t.Error("nats server_name is not the pod name ($POD_NAME from metadata.name): routes and KEDA find nodes by it")
	}
	block := regexp.MustCompile(`(?s)cluster\s*\{(.*?)\n\s*\}`).FindStringSubmatch(conf)
	if block == nil {
		t.Fatal("nats.conf has no cluster block")
	}
	listen := regexp.MustCompile(`listen:\s*0\.0\.0\.0:(\d+)`).FindStringSubmatch(block[1])
	if listen == nil {
		t.Fatal("nats.conf cluster block listens on no 0.0.0.0:PORT")
	}
	port, _ := strconv.Atoi(listen[1])
	if _, ok := containerPort([]corev1.Container{c}, intstr.FromInt(port)); !ok {
		t.Errorf("cluster port %d is not a container port of nats", port)
	}
	var routes []string
	for _, r := range regexp.MustCompile(`nats://([a-z0-9.-]+):(\d+)`).FindAllStringSubmatch(block[1], -1) {
		routes = append(routes, r[1])
		if r[2] != listen[1] {
			t.Errorf("route %s: port %s, want the cluster port %s", r[0], r[2], listen[1])
		}
		if err := servicePort(m, strings.TrimPrefix(r[1], strings.SplitN(r[1], ".", 2)[0]+".")+":"+r[2]); err != nil {
			t.Errorf("route %s: %v", r[0], err)
		}
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("nats-%d.%s", i, sts.Spec.ServiceName))
	}
	if !slices.Equal(routes, want) {
		t.Errorf("nats routes %v, want every pod under the headless Service: %v", routes, want)
	}
	// Every skillfleet process keeps the queue on as many nodes as there
	// are (a process that creates the stream or run directory with fewer
	// replicas would make a lost node stop the fleet).
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			if strings.HasPrefix(c.Image, "skillfleet") && flagValue(c.Args, "nats") != "" && flagValue(c.Args, "nats-replicas") != strconv.Itoa(int(n)) {
				t.Errorf("%s: --nats-replicas=%q, want %d (the NATS cluster's size)", p, flagValue(c.Args, "nats-replicas"), n)
			}
		}
	}
	pdb, ok := find[*policyv1.PodDisruptionBudget](m, "nats")
	if !ok || !selects(t, pdb.Spec.Selector, sts.Spec.Template.Labels) {
		t.Error("no PodDisruptionBudget selecting the nats pods")
	} else if mu := pdb.Spec.MaxUnavailable; mu == nil || mu.Type != intstr.Int || n-mu.IntVal <= n/2 {
		t.Errorf("nats PodDisruptionBudget maxUnavailable %v would let voluntary disruptions break the quorum of %d", mu, n)
	}
}

// containerPort resolves a port (number or name) against a container list.
func containerPort(cs []corev1.Container, port intstr.IntOrString) (int32, bool) {
	for _, c := range cs {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func checkServices(t *testing.T, m manifests) {
	for _, svc := range ofType[*corev1.Service](m) {
		pods := podsSelectedBy(t, m, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if len(pods) == 0 {
			t.Errorf("Service %s selects no pods (selector %v)", svc.Name, svc.Spec.Selector)
			continue
		}
		for _, sp := range svc.Spec.Ports {
			target := sp.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(sp.Port)
			}
			for _, p := range pods {
				if _, ok := containerPort(p.spec.Containers, target); !ok {
					t.Errorf("Service %s port %s: target %s is not a port of %s", svc.Name, sp.Name, target.String(), p)
				}
			}
		}
	}
}

// servicePort checks that host:port names a Service port.
func servicePort(m manifests, hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	svcName, _, _ := strings.Cut(host, ".")
	svc, ok := find[*corev1.Service](m, svcName)
	if !ok {
		return fmt.Errorf("no Service %q", svcName)
	}
	if rest := strings.TrimPrefix(host, svcName); rest != "" && !strings.HasPrefix(rest, "."+m.namespace+".svc") {
		return fmt.Errorf("%s names namespace other than %s", host, m.namespace)
	}
	n, _ := strconv.Atoi(port)
	for _, sp := range svc.Spec.Ports {
		if int(sp.Port) == n {
			return nil
		}
	}
	return fmt.Errorf("Service %s has no port %s", svcName, port)
}

// configKeys returns the keys a ConfigMap or Secret holds, or nil if it is missing.
func configKeys(m manifests, kind, name string) map[string]bool {
	keys := map[string]bool{}
	switch kind {
	case "ConfigMap":
		cm, ok := find[*corev1.ConfigMap](m, name)
		if !ok {
			return nil
		}
		for k := range cm.Data {
			keys[k] = true
		}
		for k := range cm.BinaryData {
			keys[k] = true
		}
	case "Secret":
		s, ok := find[*corev1.Secret](m, name)
		if !ok {
			return nil
		}
		for k := range s.Data {
			keys[k] = true
		}
		for k := range s.StringData {
			keys[k] = true
		}
	}
	return keys
}

func checkConfigRefs(t *testing.T, m manifests) {
	ref := func(p pod, kind, name, key string) {
		keys := configKeys(m, kind, name)
		switch {
		case keys == nil:
			t.Errorf("%s refers to %s %q, which does not exist", p, kind, name)
		case key != "" && !keys[key]:
			t.Errorf("%s refers to key %q of %s %q, which does not exist", p, key, kind, name)
		}
	}
	for _, p := range m.pods() {
		for _, v := range p.spec.Volumes {
			if v.ConfigMap != nil {
				ref(p, "ConfigMap", v.ConfigMap.Name, "")
				for _, it := range v.ConfigMap.Items {
					ref(p, "ConfigMap", v.ConfigMap.Name, it.Key)
				}
			}
			if v.Secret != nil {
				ref(p, "Secret", v.Secret.SecretName, "")
				for _, it := range v.Secret.Items {
					ref(p, "Secret", v.Secret.SecretName, it.Key)
				}
			}
		}
		for _, c := range p.spec.Containers {
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil {
					ref(p, "Secret", ef.SecretRef.Name, "")
				}
				if ef.ConfigMapRef != nil {
					ref(p, "ConfigMap", ef.ConfigMapRef.Name, "")
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					ref(p, "Secret", r.Name, r.Key)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					ref(p, "ConfigMap", r.Name, r.Key)
				}
			}
		}
	}
}

// mountFor returns the volume mount under which file lies.
func mountFor(c corev1.Container, file string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i, vm := range c.VolumeMounts {
		if file == vm.MountPath || strings.HasPrefix(file, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			if best == nil || len(vm.MountPath) > len(best.MountPath) {
				best = &c.VolumeMounts[i]
			}
		}
	}
	return best
}

// fileProvided reports whether file exists in the container: it lies in a
// ConfigMap or Secret volume that holds it, or in a writable volume.
func fileProvided(m manifests, p pod, c corev1.Container, file string) error {
	vm := mountFor(c, file)
	if vm == nil {
		return fmt.Errorf("%s is on no volume", file)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(file, vm.MountPath), "/")
	for _, v := range p.spec.Volumes {
		if v.Name != vm.Name {
			continue
		}
		var kind, name string
		var items []corev1.KeyToPath
		switch {
		case v.ConfigMap != nil:
			kind, name, items = "ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items
		case v.Secret != nil:
			kind, name, items = "Secret", v.Secret.SecretName, v.Secret.Items
		default:
			return nil
		}
		if len(items) > 0 {
			for _, it := range items {
				if it.Path == rel {
					return nil
				}
			}
			return fmt.Errorf("%s: %s %s projects no %q", file, kind, name, rel)
		}
		if !configKeys(m, kind, name)[rel] {
			return fmt.Errorf("%s: %s %s has no key %q", file, kind, name, rel)
		}
		return nil
	}
	return nil // a claim template
}

func checkVolumes(t *testing.T, m manifests) {
	for _, p := range m.pods() {
		names := map[string]bool{}
		for _, v := range p.spec.Volumes {
			names[v.Name] = true
		}
		for _, c := range p.claims {
			names[c.Name] = true
			if len(c.Spec.AccessModes) == 0 || c.Spec.Resources.Requests.Storage().IsZero() {
				t.Errorf("%s: claim template %s lacks access modes or a storage request", p, c.Name)
			}
		}
		used := map[string]bool{}
		for _, c := range p.spec.Containers {
			for _, vm := range c.VolumeMounts {
				used[vm.Name] = true
				if !names[vm.Name] {
					t.Errorf("%s: container %s mounts %q, which is no volume or claim template", p, c.Name, vm.Name)
				}
			}
			// Every *_FILE variable names a file the pod provides.
			for _, e := range c.Env {
				if strings.HasSuffix(e.Name, "_FILE") {
					if err := fileProvided(m, p, c, e.Value); err != nil {
						t.Errorf("%s: %s=%s: %v", p, e.Name, e.Value, err)
					}
				}
			}
		}
		for n := range names {
			if !used[n] {
				t.Errorf("%s: volume %q is never mounted", p, n)
			}
		}
	}
}

func checkProbes(t *testing.T, m manifests) {
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			if c.LivenessProbe == nil || c.ReadinessProbe == nil {
				t.Errorf("%s: container %s lacks a liveness or readiness probe", p, c.Name)
			}
			for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if pr == nil {
					continue
				}
				var port intstr.IntOrString
				switch {
				case pr.HTTPGet != nil:
					port = pr.HTTPGet.Port
					if !strings.HasPrefix(pr.HTTPGet.Path, "/healthz") {
						t.Errorf("%s: container %s probes %s, want a /healthz endpoint", p, c.Name, pr.HTTPGet.Path)
					}
				case pr.TCPSocket != nil:
					port = pr.TCPSocket.Port
				default:
					t.Errorf("%s: container %s has a probe that is neither HTTP nor TCP", p, c.Name)
					continue
				}
				if _, ok := containerPort([]corev1.Container{c}, port); !ok {
					t.Errorf("%s: container %s probes port %s, which it does not declare", p, c.Name, port.String())
				}
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okReq := c.Resources.Requests[res]
				lim, okLim := c.Resources.Limits[res]
				if !okReq || !okLim {
					t.Errorf("%s: container %s lacks a %s request or limit", p, c.Name, res)
				} else if req.Cmp(lim) > 0 {
					t.Errorf("%s: container %s requests more %s than its limit", p, c.Name, res)
				}
			}
		}
	}
}

// flagValue returns a flag's value from args given as --name=value or
// --name value.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func checkArgs(t *testing.T, m manifests) {
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			if !strings.HasPrefix(c.Image, "skillfleet") {
				continue
			}
			// Addresses of other components name Service ports.
			for _, f := range []string{"nats", "redis"} {
				if v := flagValue(c.Args, f); v != "" {
					u, err := url.Parse(v)
					if err != nil {
						t.Errorf("%s: --%s=%s: %v", p, f, v, err)
					} else if err := servicePort(m, u.Host); err != nil {
						t.Errorf("%s: --%s=%s: %v", p, f, v, err)
					}
				}
			}
			if v := flagValue(c.Args, "coordinator"); v != "" {
				if err := servicePort(m, v); err != nil {
					t.Errorf("%s: --coordinator=%s: %v", p, v, err)
				}
			}
			// Listen addresses are declared container ports, on all interfaces.
			for _, f := range []string{"grpc-addr", "health-addr", "addr"} {
				v := flagValue(c.Args, f)
				if v == "" {
					continue
				}
				host, port, err := net.SplitHostPort(v)
				n, _ := strconv.Atoi(port)
				if err != nil || host != "0.0.0.0" {
					t.Errorf("%s: --%s=%s: want 0.0.0.0:PORT inside a pod", p, f, v)
				}
				if _, ok := containerPort([]corev1.Container{c}, intstr.FromInt(n)); !ok {
					t.Errorf("%s: --%s=%s: port not declared", p, f, v)
				}
			}
			if v := flagValue(c.Args, "config"); v != "" {
				if err := fileProvided(m, p, c, v); err != nil {
					t.Errorf("%s: --config: %v", p, err)
				}
			}
			if c.Image != "skillfleet:dev" {
				t.Errorf("%s: image %s, want the overlay's skillfleet:dev", p, c.Image)
			}
		}
		if p.owner.obj.GetName() == "worker" {
			args := p.spec.Containers[0].Args
			if args[0] != "worker" || flagValue(args, "concurrency") != "24" {
				t.Errorf("worker args = %v", args)
			}
		}
	}
	// URLs in the run config name Services.
	urlRE := regexp.MustCompile(`https?://([a-z0-9.-]+:[0-9]+)`)
	for _, cm := range ofType[*corev1.ConfigMap](m) {
		for key, v := range cm.Data {
			for _, match := range urlRE.FindAllStringSubmatch(v, -1) {
				if err := servicePort(m, match[1]); err != nil {
					t.Errorf("ConfigMap %s key %s: %s: %v", cm.Name, key, match[0], err)
				}
			}
		}
	}
}

func checkHardening(t *testing.T, m manifests) {
	for _, p := range m.pods() {
		if p.spec.AutomountServiceAccountToken == nil || *p.spec.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token it does not need", p)
		}
		sc := p.spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: pod does not require a non-root user", p)
		}
		for _, c := range p.spec.Containers {
			cs := c.SecurityContext
			if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
				cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
				cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") {
				t.Errorf("%s: container %s: want no privilege escalation, a read-only root and all capabilities dropped", p, c.Name)
			}
		}
	}
}

// flow is a connection the NetworkPolicies must allow or deny.
type flow struct {
	from, to string // app.kubernetes.io/name of the pods
	port     int32
	allowed  bool
}

func checkNetworkPolicies(t *testing.T, m manifests) {
	pols := ofType[*networkingv1.NetworkPolicy](m)
	for _, np := range pols {
		var targets []pod
		if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) > 0 {
			if targets = podsSelectedBy(t, m, &np.Spec.PodSelector); len(targets) == 0 {
				t.Errorf("NetworkPolicy %s selects no pods", np.Name)
			}
		}
		for _, r := range np.Spec.Ingress {
			checkPeers(t, m, np.Name, r.From)
			for _, tp := range targets {
				checkPolicyPorts(t, np.Name, r.Ports, []pod{tp})
			}
		}
		for _, r := range np.Spec.Egress {
			peers := checkPeers(t, m, np.Name, r.To)
			checkPolicyPorts(t, np.Name, r.Ports, peers)
		}
	}
	byName := map[string]pod{}
	for _, p := range m.pods() {
		byName[p.labels["app.kubernetes.io/name"]] = p
	}
	flows := []flow{
		{"worker", "nats", 4222, true},
		{"worker", "coordinator", 7070, true},
		{"worker", "redis", 6379, true},
		{"coordinator", "nats", 4222, true},
		{"coordinator", "redis", 6379, true},
		{"coordinator", "worker", 8081, false},
		{"worker", "nats", 8222, false},
		{"worker", "coordinator", 8080, false},
		{"nats", "redis", 6379, false},
		{"redis", "coordinator", 7070, false},
		{"nats", "coordinator", 7070, false},
		{"nats", "nats", 6222, true},
		{"worker", "nats", 6222, false},
		{"coordinator", "nats", 6222, false},
	}
	if _, ok := byName["sim-llm"]; ok {
		flows = append(flows, flow{"worker", "sim-llm", 8089, true}, flow{"sim-llm", "redis", 6379, false}, flow{"coordinator", "sim-llm", 8089, false})
	}
	for _, f := range flows {
		from, okF := byName[f.from]
		to, okT := byName[f.to]
		if !okF || !okT {
			t.Errorf("flow %s -> %s: no such pods", f.from, f.to)
			continue
		}
		egress := policyAllows(t, pols, from, to, f.port, networkingv1.PolicyTypeEgress)
		ingress := policyAllows(t, pols, to, from, f.port, networkingv1.PolicyTypeIngress)
		if got := egress && ingress; got != f.allowed {
			t.Errorf("%s -> %s:%d allowed = %t (egress %t, ingress %t), want %t", f.from, f.to, f.port, got, egress, ingress, f.allowed)
		}
	}
}

// checkPeers returns the in-namespace pods that a rule's pod-selector peers
// match, and reports a pod selector that matches nothing.
func checkPeers(t *testing.T, m manifests, policy string, peers []networkingv1.NetworkPolicyPeer) []pod {
	var out []pod
	for _, peer := range peers {
		if peer.PodSelector == nil || peer.NamespaceSelector != nil {
			continue // other namespaces, or addresses
		}
		ps := podsSelectedBy(t, m, peer.PodSelector)
		if len(ps) == 0 {
			t.Errorf("NetworkPolicy %s: peer %v selects no pods", policy, peer.PodSelector.MatchLabels)
		}
		out = append(out, ps...)
	}
	return out
}

func checkPolicyPorts(t *testing.T, policy string, ports []networkingv1.NetworkPolicyPort, pods []pod) {
	for _, pp := range ports {
		if pp.Port == nil {
			continue
		}
		for _, p := range pods {
			if _, ok := containerPort(p.spec.Containers, *pp.Port); !ok {
				t.Errorf("NetworkPolicy %s: port %s is not a port of %s", policy, pp.Port.String(), p)
			}
		}
	}
}

// policyAllows evaluates the policies for traffic on port between self and
// peer, in direction dir as seen from self (the pods the policy selects).
func policyAllows(t *testing.T, pols []*networkingv1.NetworkPolicy, self, peer pod, port int32, dir networkingv1.PolicyType) bool {
	isolated := false
	// The port as seen on the destination pod (the peer for egress).
	dst := self
	if dir == networkingv1.PolicyTypeEgress {
		dst = peer
	}
	for _, np := range pols {
		s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Matches(labels.Set(self.labels)) || !slices.Contains(np.Spec.PolicyTypes, dir) {
			continue
		}
		isolated = true
		type rule struct {
			peers []networkingv1.NetworkPolicyPeer
			ports []networkingv1.NetworkPolicyPort
		}
		var rules []rule
		if dir == networkingv1.PolicyTypeIngress {
			for _, r := range np.Spec.Ingress {
				rules = append(rules, rule{r.From, r.Ports})
			}
		} else {
			for _, r := range np.Spec.Egress {
				rules = append(rules, rule{r.To, r.Ports})
			}
		}
		for _, r := range rules {
			peerOK := len(r.peers) == 0
			for _, pr := range r.peers {
				if pr.PodSelector != nil && pr.NamespaceSelector == nil && selects(t, pr.PodSelector, peer.labels) {
					peerOK = true
				}
			}
			portOK := len(r.ports) == 0
			for _, pp := range r.ports {
				if pp.Port == nil {
					portOK = true
				} else if n, ok := containerPort(dst.spec.Containers, *pp.Port); ok && n == port {
					portOK = true
				}
			}
			if peerOK && portOK {
				return true
			}
		}
	}
	return !isolated
}

// placeholder marks the example's secret values: never real keys.
const placeholder = "change-me"

func checkSecrets(t *testing.T, m manifests) {
	secrets := ofType[*corev1.Secret](m)
	if len(secrets) == 0 {
		t.Fatal("no Secrets in the overlay")
	}
	for _, s := range secrets {
		if len(s.Data) > 0 {
			t.Errorf("Secret %s uses base64 data; the example keeps placeholders readable in stringData", s.Name)
		}
		for k, v := range s.StringData {
			if !strings.Contains(v, placeholder) {
				t.Errorf("Secret %s key %s holds something other than a %q placeholder", s.Name, k, placeholder)
			}
		}
	}
	// The Redis ACL and the clients agree on the password, and the ACL
	// confines the user to the store's key prefix.
	rs, ok := find[*corev1.Secret](m, "skillfleet-redis")
	if !ok {
		t.Fatal("no Secret skillfleet-redis")
	}
	acl := rs.StringData["users.acl"]
	if !strings.Contains(acl, ">"+rs.StringData["password"]+" ") {
		t.Error("users.acl does not carry the password the clients read")
	}
	if !strings.Contains(acl, "~"+store.DefaultPrefix+"* ") {
		t.Errorf("users.acl does not confine keys to ~%s*", store.DefaultPrefix)
	}
	if !strings.Contains(acl, "user default off") {
		t.Error("users.acl leaves the default (passwordless) user on")
	}
	for _, p := range m.pods() {
		for _, c := range p.spec.Containers {
			for _, e := range c.Env {
				if strings.Contains(strings.ToUpper(e.Name), "PASSWORD") && !strings.HasSuffix(e.Name, "_FILE") && e.Value != "" {
					t.Errorf("%s: %s is set inline; mount secrets as files", p, e.Name)
				}
			}
		}
	}
}

func checkAutoscaling(t *testing.T, m manifests, dir string) {
	var scaled []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.gvk == scaledObjectGVK {
			scaled = append(scaled, o.obj.(*unstructured.Unstructured))
		}
	}
	hpas := ofType[*autoscalingv2.HorizontalPodAutoscaler](m)
	switch dir {
	case "overlays/example":
		if len(scaled) != 1 || len(hpas) != 0 {
			t.Fatalf("%d ScaledObjects and %d HPAs, want one ScaledObject", len(scaled), len(hpas))
		}
		checkScaledObject(t, m, scaled[0])
	case "overlays/example-hpa":
		if len(scaled) != 0 || len(hpas) != 1 {
			t.Fatalf("%d ScaledObjects and %d HPAs, want one HPA", len(scaled), len(hpas))
		}
		h := hpas[0]
		if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != "worker" {
			t.Errorf("HPA targets %v, want Deployment worker", h.Spec.ScaleTargetRef)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			t.Errorf("HPA replicas %v..%d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
	default:
		t.Fatalf("no autoscaling expectations for %s", dir)
	}
}

// allowedKeys fails on any key of m outside allowed: the generic map gets
// the strictness the typed objects get from their Go types.
func allowedKeys(t *testing.T, where string, m map[string]any, allowed ...string) {
	t.Helper()
	for k := range m {
		if !slices.Contains(allowed, k) {
			t.Errorf("ScaledObject %s: unknown field %q", where, k)
		}
	}
}

func field[T any](t *testing.T, m map[string]any, key string) T {
	t.Helper()
	v, ok := m[key].(T)
	if !ok {
		var zero T
		t.Errorf("ScaledObject field %q = %#v, want a %T", key, m[key], zero)
		return zero
	}
	return v
}

// checkScaledObject checks KEDA's ScaledObject against the fields KEDA
// 2.x accepts and against the objects and queue names it refers to.
func checkScaledObject(t *testing.T, m manifests, so *unstructured.Unstructured) {
	obj := so.Object
	allowedKeys(t, "", obj, "apiVersion", "kind", "metadata", "spec")
	allowedKeys(t, "metadata", field[map[string]any](t, obj, "metadata"), "name", "labels", "annotations", "namespace")
	spec := field[map[string]any](t, obj, "spec")
	allowedKeys(t, "spec", spec, "scaleTargetRef", "pollingInterval", "cooldownPeriod", "idleReplicaCount",
		"minReplicaCount", "maxReplicaCount", "fallback", "advanced", "triggers")

	ref := field[map[string]any](t, spec, "scaleTargetRef")
	allowedKeys(t, "spec.scaleTargetRef", ref, "apiVersion", "kind", "name", "envSourceContainerName")
	if ref["apiVersion"] != "apps/v1" || ref["kind"] != "Deployment" {
		t.Errorf("scaleTargetRef = %v, want apps/v1 Deployment", ref)
	}
	if _, ok := find[*appsv1.Deployment](m, field[string](t, ref, "name")); !ok {
		t.Errorf("scaleTargetRef names Deployment %v, which does not exist", ref["name"])
	}
	minR, maxR := field[float64](t, spec, "minReplicaCount"), field[float64](t, spec, "maxReplicaCount")
	if minR < 1 || maxR < minR {
		t.Errorf("replicas %v..%v: want at least one warm worker and max >= min", minR, maxR)
	}
	if adv, ok := spec["advanced"].(map[string]any); ok {
		allowedKeys(t, "spec.advanced", adv, "horizontalPodAutoscalerConfig", "restoreToOriginalReplicaCount", "scalingModifiers")
		if hc, ok := adv["horizontalPodAutoscalerConfig"].(map[string]any); ok {
			allowedKeys(t, "spec.advanced.horizontalPodAutoscalerConfig", hc, "name", "behavior")
			b, _ := yaml.Marshal(hc["behavior"])
			var behavior autoscalingv2.HorizontalPodAutoscalerBehavior
			if err := yaml.UnmarshalStrict(b, &behavior); err != nil {
				t.Errorf("advanced.horizontalPodAutoscalerConfig.behavior: %v", err)
			}
		}
	}

	consumers := map[string]bool{}
	triggers := field[[]any](t, spec, "triggers")
	for i, tr := range triggers {
		tm, _ := tr.(map[string]any)
		allowedKeys(t, fmt.Sprintf("triggers[%d]", i), tm, "type", "name", "metadata", "authenticationRef", "metricType", "useCachedMetrics")
		if tm["type"] != "nats-jetstream" {
			t.Errorf("trigger %d type = %v, want nats-jetstream", i, tm["type"])
			continue
		}
		md := field[map[string]any](t, tm, "metadata")
		allowedKeys(t, fmt.Sprintf("triggers[%d].metadata", i), md, "natsServerMonitoringEndpoint", "account",
			"stream", "consumer", "lagThreshold", "activationLagThreshold", "useHttps")
		for k, v := range md {
			if _, ok := v.(string); !ok {
				t.Errorf("trigger %d metadata %s = %#v: KEDA wants strings", i, k, v)
			}
		}
		if md["stream"] != queue.StreamName {
			t.Errorf("trigger %d stream = %v, want %s", i, md["stream"], queue.StreamName)
		}
		consumers[fmt.Sprint(md["consumer"])] = true
		if n, err := strconv.Atoi(fmt.Sprint(md["lagThreshold"])); err != nil || n < 1 {
			t.Errorf("trigger %d lagThreshold = %v, want a positive integer", i, md["lagThreshold"])
		}
		// KEDA runs in its own namespace: the endpoint must be the NATS
		// monitoring port by its fully qualified name, under the headless
		// Service, where KEDA finds a clustered stream's leader
		// (<server name>.<endpoint>).
		ep := fmt.Sprint(md["natsServerMonitoringEndpoint"])
		host, port, err := net.SplitHostPort(ep)
		if err != nil || host != "nats-headless."+m.namespace+".svc.cluster.local" {
			t.Errorf("trigger %d endpoint %q, want nats-headless.%s.svc.cluster.local:PORT", i, ep, m.namespace)
		} else if err := servicePort(m, ep); err != nil {
			t.Errorf("trigger %d endpoint: %v", i, err)
		} else if port != "8222" {
			t.Errorf("trigger %d endpoint port %s, want the monitoring port 8222", i, port)
		}
		if md["account"] != "$G" {
			t.Errorf("trigger %d account = %v, want $G (no accounts configured)", i, md["account"])
		}
	}
	want := map[string]bool{queue.ConsumerCritical: true, queue.ConsumerBulk: true, queue.ConsumerOptimizer: true}
	if fmt.Sprint(consumers) != fmt.Sprint(want) {
		t.Errorf("scaled consumers %v, want one trigger per task consumer %v", consumers, want)
	}
}

// TestBaseEndpointsNameExampleNamespace guards the one string kustomize
// cannot rewrite: the namespace inside the NATS endpoint.
func TestBaseEndpointsNameExampleNamespace(t *testing.T) {
	t.Parallel()
	k, err := readKustomization("overlays/example")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path.Join("base", "keda-scaledobject.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "nats-headless."+k.Namespace+".svc.cluster.local:8222") {
		t.Errorf("base ScaledObject endpoint does not name namespace %s", k.Namespace)
	}
}

// TestCampaignStatefulSetRenders: the campaign's manifests decode
// strictly, and the ports the campaign is told to use are the ones its
// policies open.
func TestCampaignStatefulSetRenders(t *testing.T) {
	t.Parallel()
	objs, err := render("campaign")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.gvk[strings.LastIndex(o.gvk, "/")+1:]] = true
	}
	for _, k := range []string{"StatefulSet", "PersistentVolumeClaim", "Service", "NetworkPolicy"} {
		if !kinds[k] {
			t.Errorf("deploy/campaign renders no %s", k)
		}
	}
	b, err := os.ReadFile(filepath.Join("campaign", "campaign-statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// One port serves every cell of a member: no range to open.
	if !strings.Contains(string(b), "--grpc-port=7070") || strings.Contains(string(b), "endPort") || strings.Count(string(b), "port: 7070") != 3 {
		t.Error("the campaign's --grpc-port and the port its Service and NetworkPolicies open disagree")
	}
}
