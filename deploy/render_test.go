// Package deploy_test checks the Kubernetes manifests under deploy/: every
// object decodes strictly into its Kubernetes API type, each overlay is
// rendered the way kustomize would (the subset of kustomize the manifests
// use), and the rendered objects refer to each other correctly.
package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization the manifests
// use. Decoding it strictly makes any other field an error, so the checker
// never silently ignores a transformation kustomize would apply.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// object is one decoded manifest document.
type object struct {
	source string // file#document
	gvk    string // apiVersion/kind
	obj    metav1.Object
}

func (o object) String() string { return fmt.Sprintf("%s %s (%s)", o.gvk, o.obj.GetName(), o.source) }

// kinds maps apiVersion/kind to a new typed object. KEDA's ScaledObject has
// no Go type here; it decodes into an unstructured map and is checked field
// by field (checkScaledObject).
var kinds = map[string]func() metav1.Object{
	"v1/Namespace":                           func() metav1.Object { return &corev1.Namespace{} },
	"v1/ConfigMap":                           func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Secret":                              func() metav1.Object { return &corev1.Secret{} },
	"v1/Service":                             func() metav1.Object { return &corev1.Service{} },
	"apps/v1/StatefulSet":                    func() metav1.Object { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":                     func() metav1.Object { return &appsv1.Deployment{} },
	"networking.k8s.io/v1/NetworkPolicy":     func() metav1.Object { return &networkingv1.NetworkPolicy{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() metav1.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"v1/PersistentVolumeClaim":               func() metav1.Object { return &corev1.PersistentVolumeClaim{} },
	"batch/v1/Job":                           func() metav1.Object { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":          func() metav1.Object { return &policyv1.PodDisruptionBudget{} },
}

const scaledObjectGVK = "keda.sh/v1alpha1/ScaledObject"

// clusterScoped kinds get no namespace.
var clusterScoped = map[string]bool{"v1/Namespace": true}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeFile decodes every document of a manifest file strictly: unknown
// or duplicate fields are errors, as with kubectl's strict field validation.
func decodeFile(path string) ([]object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []object
	for i, doc := range docSep.Split(string(b), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		o, err := decodeDoc([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", path, i, err)
		}
		o.source = fmt.Sprintf("%s#%d", path, i)
		out = append(out, o)
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func decodeDoc(doc []byte) (object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return object{}, err
	}
	gvk := tm.APIVersion + "/" + tm.Kind
	if gvk == scaledObjectGVK {
		var m map[string]any
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return object{}, err
		}
		return object{gvk: gvk, obj: &unstructured.Unstructured{Object: m}}, nil
	}
	newObj, ok := kinds[gvk]
	if !ok {
		return object{}, fmt.Errorf("unknown kind %q (add it to kinds with its API type)", gvk)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return object{}, err
	}
	if obj.GetName() == "" {
		return object{}, fmt.Errorf("%s without metadata.name", gvk)
	}
	return object{gvk: gvk, obj: obj}, nil
}

func readKustomization(dir string) (*kustomization, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s/kustomization.yaml: apiVersion/kind = %s/%s", dir, k.APIVersion, k.Kind)
	}
	return &k, nil
}

// render builds a kustomization directory as `kustomize build` would for
// the features kustomization allows: resources (files and directories),
// namespace, images, and patches that delete an object.
func render(dir string) ([]object, error) {
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", dir, r, err)
		}
		var more []object
		if fi.IsDir() {
			more, err = render(p)
		} else {
			more, err = decodeFile(p)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	for _, p := range k.Patches {
		if objs, err = applyDeletePatch(objs, filepath.Join(dir, p.Path)); err != nil {
			return nil, err
		}
	}
	for _, o := range objs {
		if k.Namespace != "" && !clusterScoped[o.gvk] {
			o.obj.SetNamespace(k.Namespace)
		}
		for _, img := range k.Images {
			for _, c := range podSpecContainers(o) {
				c.Image = retag(c.Image, img.Name, img.NewName, img.NewTag)
			}
		}
	}
	return objs, nil
}

func applyDeletePatch(objs []object, path string) ([]object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p struct {
		Patch      string `json:"$patch"`
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w (only $patch: delete patches are supported here)", path, err)
	}
	if p.Patch != "delete" {
		return nil, fmt.Errorf("%s: $patch = %q; only delete patches are supported here", path, p.Patch)
	}
	gvk := p.APIVersion + "/" + p.Kind
	out := slices.DeleteFunc(slices.Clone(objs), func(o object) bool { return o.gvk == gvk && o.obj.GetName() == p.Metadata.Name })
	if len(out) == len(objs) {
		return nil, fmt.Errorf("%s: deletes %s %s, which is not there", path, gvk, p.Metadata.Name)
	}
	return out, nil
}

// retag applies a kustomize images entry to an image reference.
func retag(image, name, newName, newTag string) string {
	ref, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		ref, tag = image[:i], image[i+1:]
	}
	if ref != name {
		return image
	}
	if newName != "" {
		ref = newName
	}
	if newTag != "" {
		tag = newTag
	}
	if tag == "" {
		return ref
	}
	return ref + ":" + tag
}

// pod is a pod template with the workload that owns it.
type pod struct {
	owner  object
	labels map[string]string
	spec   *corev1.PodSpec
	claims []corev1.PersistentVolumeClaim // StatefulSet volume claim templates
}

func (p pod) String() string { return p.owner.String() }

func podOf(o object) (pod, bool) {
	switch w := o.obj.(type) {
	case *appsv1.Deployment:
		return pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec}, true
	case *appsv1.StatefulSet:
		return pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec, claims: w.Spec.VolumeClaimTemplates}, true
	}
	return pod{}, false
}

func podSpecContainers(o object) []*corev1.Container {
	p, ok := podOf(o)
	if !ok {
		return nil
	}
	var cs []*corev1.Container
	for i := range p.spec.InitContainers {
		cs = append(cs, &p.spec.InitContainers[i])
	}
	for i := range p.spec.Containers {
		cs = append(cs, &p.spec.Containers[i])
	}
	return cs
}

// manifests is a rendered overlay with lookups.
type manifests struct {
	namespace string
	objs      []object
}

func (m manifests) pods() []pod {
	var ps []pod
	for _, o := range m.objs {
		if p, ok := podOf(o); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func find[T metav1.Object](m manifests, name string) (T, bool) {
	for _, o := range m.objs {
		if t, ok := o.obj.(T); ok && o.obj.GetName() == name {
			return t, true
		}
	}
	var zero T
	return zero, false
}

func ofType[T metav1.Object](m manifests) []T {
	var out []T
	for _, o := range m.objs {
		if t, ok := o.obj.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// yamlFiles lists the manifest files of a kustomization directory.
func yamlFiles(dir string) ([]string, error) {
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) && n != "kustomization.yaml" {
			out = append(out, n)
		}
	}
	return out, nil
}
