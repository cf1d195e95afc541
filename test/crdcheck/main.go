// Command crdcheck holds the CRDs in crds/ and the project's documents to the
// Kubernetes API server's own code (k8s.io/apiextensions-apiserver, pinned in
// go.mod), with no cluster:
//
//   - every CRD goes through ValidateCustomResourceDefinition, the check the
//     API server runs on a CRD create: structural schema, pruned defaults,
//     metadata schema, CEL compilation and its estimated cost per rule and per
//     schema;
//   - every document (manifests/examples, test/data/bad, and the rows of
//     test/conformance/parity.mjs given with -rows) goes through a custom
//     resource create: strict decoding (unknown fields are errors, as kubectl
//     apply asks), pruning, ObjectMeta coercion, defaulting, the strategy's
//     PrepareForCreate (status dropped), the OpenAPI schema validator and the
//     CEL rules, then ObjectMeta validation;
//   - the same document goes to `spacectl validate -o json -f -`: both must
//     accept or both reject, as the document's source expects, and an
//     accepted object must be the one the API server stores (metadata.name,
//     labels, annotations and spec; durations compared by value).
//
// Usage: crdcheck [-spacectl PATH] [-rows FILE] ROOT
//
// It prints one line per check and "crdcheck: N passed, N failed"; the exit
// status is 1 when a check failed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	sigsyaml "sigs.k8s.io/yaml"
)

var (
	passed, failed int
)

func check(ok bool, what string, detail ...string) {
	if ok {
		passed++
		fmt.Printf("ok   %s\n", what)
		return
	}
	failed++
	fmt.Printf("FAIL %s\n", what)
	for _, d := range detail {
		if d != "" {
			fmt.Printf("     %s\n", strings.ReplaceAll(d, "\n", "\n     "))
		}
	}
}

// ---- the CRDs ----

// served is one CRD as the API server serves it after accepting it.
type served struct {
	crd      *apiextensions.CustomResourceDefinition
	strategy map[string]servedVersion // by version name
}

type servedVersion struct {
	structural *structuralschema.Structural
	strategy   rest.RESTCreateStrategy
}

var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// loadCRD decodes a CRD file the way the API server decodes a create
// request (strict, defaults applied, converted to the internal version) and
// fills what the registry's PrepareForCreate fills.
func loadCRD(path string) (*apiextensions.CustomResourceDefinition, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := sigsyaml.YAMLToJSON(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	codecs := serializer.NewCodecFactory(crdScheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDecoder(apiextensions.SchemeGroupVersion).Decode(js, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	crd, ok := obj.(*apiextensions.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not a CustomResourceDefinition", path, obj)
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
	}
	return crd, nil
}

// serve builds, per version, what the API server's custom resource handler
// builds: the structural schema with pruned defaults and the create strategy
// (schema validator, CEL validator).
func serve(crd *apiextensions.CustomResourceDefinition) (*served, error) {
	s := &served{crd: crd, strategy: map[string]servedVersion{}}
	for _, v := range crd.Spec.Versions {
		// the internal version holds a schema shared by every version at
		// spec.validation, not per version: the helpers read either
		val, err := apiextensions.GetSchemaForVersion(crd, v.Name)
		if err != nil || val == nil || val.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("version %s has no schema (%v)", v.Name, err)
		}
		subresources, err := apiextensions.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("version %s: %v", v.Name, err)
		}
		st, err := structuralschema.NewStructural(val.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s: %v", v.Name, err)
		}
		st = st.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(st); err != nil {
			return nil, fmt.Errorf("version %s: %v", v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(val.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s: %v", v.Name, err)
		}
		kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		var status *apiextensions.CustomResourceSubresourceStatus
		var scale *apiextensions.CustomResourceSubresourceScale
		if subresources != nil {
			status, scale = subresources.Status, subresources.Scale
		}
		strategy := customresource.NewStrategy(unstructuredTyper{},
			crd.Spec.Scope == apiextensions.NamespaceScoped, kind, validator, nil, st,
			status, scale, nil)
		s.strategy[v.Name] = servedVersion{structural: st, strategy: strategy}
	}
	return s, nil
}

// unstructuredTyper names an Unstructured object by its apiVersion and kind.
type unstructuredTyper struct{}

func (unstructuredTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (unstructuredTyper) Recognizes(schema.GroupVersionKind) bool { return true }

func checkCRDs(root string) map[schema.GroupKind]*served {
	byKind := map[schema.GroupKind]*served{}
	paths, _ := filepath.Glob(filepath.Join(root, "crds", "*.yaml"))
	check(len(paths) > 0, "crds/*.yaml holds CRDs")
	for _, path := range paths {
		name := filepath.Join("crds", filepath.Base(path))
		crd, err := loadCRD(path)
		if err != nil {
			check(false, name+": decodes as a CustomResourceDefinition", err.Error())
			continue
		}
		errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd)
		lines := make([]string, 0, len(errs))
		for _, e := range errs {
			lines = append(lines, e.Error())
		}
		check(len(errs) == 0, fmt.Sprintf("%s: the API server accepts the CRD (%d errors)", name, len(errs)),
			strings.Join(lines, "\n"))
		s, err := serve(crd)
		if err != nil {
			check(false, name+": the API server can serve the CRD", err.Error())
			continue
		}
		byKind[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = s
	}
	return byKind
}

// ---- the self-test: the checks see what the API server refuses ----

// selfTest takes the bounds and the metadata rule away again and wants the
// API server's refusals: the allowOut rule over its cost budget without the
// items' maxLength, a SpaceQuota metadata schema with labels refused.
func selfTest(root string) {
	us, err := loadCRD(filepath.Join(root, "crds", "spacekeeper.dev_userspaces.yaml"))
	check(err == nil, "self-test: the UserSpace CRD decodes", fmt.Sprint(err))
	if err == nil {
		schemaOf(us, func(s *apiextensions.JSONSchemaProps) {
			spec := s.Properties["spec"]
			network := spec.Properties["network"]
			network.Properties["allowOut"].Items.Schema.MaxLength = nil
		})
		wantRefusal(us, "allowOut without items maxLength",
			"properties[allowOut].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget")
	}
	q, err := loadCRD(filepath.Join(root, "crds", "spacekeeper.dev_spacequotas.yaml"))
	check(err == nil, "self-test: the SpaceQuota CRD decodes", fmt.Sprint(err))
	if err == nil {
		schemaOf(q, func(s *apiextensions.JSONSchemaProps) {
			meta := s.Properties["metadata"]
			meta.Properties["labels"] = apiextensions.JSONSchemaProps{Type: "object",
				AdditionalProperties: &apiextensions.JSONSchemaPropsOrBool{Allows: true,
					Schema: &apiextensions.JSONSchemaProps{Type: "string"}}}
			s.Properties["metadata"] = meta
		})
		wantRefusal(q, "metadata.labels in the schema",
			"properties[metadata]: Forbidden: must not specify anything other than name and generateName")
	}
}

// schemaOf lets edit change the CRD's schema, shared or per version.
func schemaOf(crd *apiextensions.CustomResourceDefinition, edit func(*apiextensions.JSONSchemaProps)) {
	if crd.Spec.Validation != nil && crd.Spec.Validation.OpenAPIV3Schema != nil {
		edit(crd.Spec.Validation.OpenAPIV3Schema)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			edit(v.Schema.OpenAPIV3Schema)
		}
	}
}

func wantRefusal(crd *apiextensions.CustomResourceDefinition, what, want string) {
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd)
	found := false
	for _, e := range errs {
		found = found || strings.Contains(e.Error(), want)
	}
	check(found, fmt.Sprintf("self-test: %s (%s): the API server refuses it", crd.Name, what),
		fmt.Sprintf("want %q among %d errors: %v", want, len(errs), errs.ToAggregate()))
}

// ---- a custom resource create ----

// create runs one document through a custom resource create and returns the
// object the API server would store, or its errors.
func create(byKind map[schema.GroupKind]*served, doc []byte) (map[string]any, []string) {
	js, err := yaml.ToJSON(doc)
	if err != nil {
		return nil, []string{err.Error()}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, []string{err.Error()}
	}
	gvk := u.GroupVersionKind()
	s := byKind[gvk.GroupKind()]
	if s == nil {
		return nil, []string{fmt.Sprintf("no matches for kind %q in group %q", gvk.Kind, gvk.Group)}
	}
	v, ok := s.strategy[gvk.Version]
	if !ok {
		return nil, []string{fmt.Sprintf("no matches for kind %q in version %q", gvk.Kind, gvk.GroupVersion())}
	}
	unknown, err := coerce(u, v.structural)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if len(unknown) > 0 {
		// kubectl apply asks for strict field validation (its default)
		out := make([]string, 0, len(unknown))
		for _, p := range unknown {
			out = append(out, fmt.Sprintf("strict decoding error: unknown field %q", p))
		}
		return nil, out
	}
	structuraldefaulting.Default(u.Object, v.structural)

	meta := metav1.Object(u)
	rest.FillObjectMetaSystemFields(meta)
	if meta.GetGenerateName() != "" && meta.GetName() == "" {
		meta.SetName(names.SimpleNameGenerator.GenerateName(meta.GetGenerateName()))
	}
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	if err := rest.BeforeCreate(v.strategy, ctx, u); err != nil {
		return nil, []string{err.Error()}
	}
	return u.Object, nil
}

// coerce is the custom resource handler's decoding step: ObjectMeta read
// (unknown metadata fields noted), pruning of unknown fields, nulls without
// defaults dropped, ObjectMeta coerced and written back clean.
func coerce(u *unstructured.Unstructured, st *structuralschema.Structural) ([]string, error) {
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, found, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object,
		schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, st, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, st)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, st, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, paths...)
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// ---- spacectl ----

type verdict struct {
	rc     int
	object map[string]any
	stderr string
}

func spacectlValidate(bin string, doc []byte) verdict {
	cmd := exec.Command(bin, "validate", "-o", "json", "-f", "-")
	cmd.Stdin = bytes.NewReader(doc)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	v := verdict{rc: cmd.ProcessState.ExitCode(), stderr: strings.TrimSpace(errb.String())}
	if err != nil && cmd.ProcessState == nil {
		v.rc, v.stderr = -1, err.Error()
	}
	if v.rc == 0 {
		if jerr := json.Unmarshal(out.Bytes(), &v.object); jerr != nil {
			v.rc, v.stderr = -1, "spacectl printed no JSON object: "+jerr.Error()
		}
	}
	return v
}

// ---- comparing ----

var durationLike = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)

// normal orders keys and reads durations by value ("60s" and "1m" alike).
func normal(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normal(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normal(e)
		}
		return out
	case string:
		if durationLike.MatchString(x) {
			if d, err := time.ParseDuration(x); err == nil {
				return d
			}
		}
		return x
	case int64:
		return float64(x)
	default:
		return v
	}
}

// userPart is what the user wrote and spacectl prints: metadata.name (unless
// generated: random on both sides), labels and annotations, and spec.
func userPart(obj map[string]any, generated bool) map[string]any {
	out := map[string]any{"spec": obj["spec"]}
	m, _ := obj["metadata"].(map[string]any)
	meta := map[string]any{}
	for _, k := range []string{"name", "labels", "annotations"} {
		if v, ok := m[k]; ok && !(k == "name" && generated) {
			meta[k] = v
		}
	}
	out["metadata"] = meta
	return normal(out).(map[string]any)
}

// generatedFrom tells whether name is what names.SimpleNameGenerator makes
// of prefix: the prefix cut to 58 characters and 5 random ones.
func generatedFrom(prefix, name string) bool {
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	return strings.HasPrefix(name, prefix) && len(name) == len(prefix)+5
}

// ---- the documents ----

type document struct {
	source string // file and document number, or the parity row
	text   []byte
	expect string // "accept" or "reject"
}

func splitDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := yaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var probe any
		if sigsyaml.Unmarshal(d, &probe) == nil && probe != nil {
			docs = append(docs, d)
		}
	}
}

func fileDocs(root, dir, pattern, expect string) []document {
	paths, _ := filepath.Glob(filepath.Join(root, dir, pattern))
	sort.Strings(paths)
	var out []document
	for _, path := range paths {
		docs, err := splitDocs(path)
		rel := filepath.Join(dir, filepath.Base(path))
		check(err == nil, rel+": reads", fmt.Sprint(err))
		for i, d := range docs {
			src := rel
			if len(docs) > 1 {
				src = fmt.Sprintf("%s#%d", rel, i+1)
			}
			out = append(out, document{source: src, text: d, expect: expect})
		}
	}
	return out
}

// parityRows reads the rows `node test/conformance/parity.mjs --rows` prints.
func parityRows(path string) []document {
	data, err := os.ReadFile(path)
	check(err == nil, "the parity rows read", fmt.Sprint(err))
	var rows []struct {
		What   string `json:"what"`
		Text   string `json:"text"`
		Expect string `json:"expect"`
	}
	if err == nil {
		err = json.Unmarshal(data, &rows)
		check(err == nil && len(rows) > 0, "the parity rows are a JSON list", fmt.Sprint(err))
	}
	out := make([]document, 0, len(rows))
	for _, r := range rows {
		out = append(out, document{source: "parity: " + r.What, text: []byte(r.Text), expect: r.Expect})
	}
	return out
}

func checkDocument(byKind map[schema.GroupKind]*served, spacectl string, d document) {
	stored, errs := create(byKind, d.text)
	server := "accept"
	if errs != nil {
		server = "reject"
	}
	why := strings.Join(errs, "\n")
	check(server == d.expect, fmt.Sprintf("%s: the API server %ss (want %s)", d.source, server, d.expect), why)
	if spacectl == "" {
		return
	}
	mine := spacectlValidate(spacectl, d.text)
	ctl := map[int]string{0: "accept", 1: "reject"}[mine.rc]
	check(ctl == server, fmt.Sprintf("%s: spacectl validate %ss as the API server does", d.source, ctl),
		fmt.Sprintf("spacectl exit %d: %s", mine.rc, mine.stderr), "API server: "+why)
	if server == "accept" && mine.rc == 0 {
		u := unstructured.Unstructured{Object: stored}
		prefix := u.GetGenerateName()
		generated := prefix != ""
		if generated {
			name, _, _ := unstructured.NestedString(mine.object, "metadata", "name")
			check(generatedFrom(prefix, name), d.source+": spacectl generates the name as the API server does",
				fmt.Sprintf("API server: %s, spacectl: %s", u.GetName(), name))
		}
		a, b := userPart(stored, generated), userPart(mine.object, generated)
		same := reflect.DeepEqual(a, b)
		ja, _ := json.Marshal(stored)
		jb, _ := json.Marshal(mine.object)
		check(same, d.source+": spacectl prints the object the API server stores",
			"API server: "+string(ja), "spacectl:   "+string(jb))
	}
}

func main() {
	spacectl := flag.String("spacectl", "", "spacectl binary to compare with (none: the API server side only)")
	rows := flag.String("rows", "", "JSON file of parity rows (node test/conformance/parity.mjs --rows)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crdcheck [-spacectl PATH] [-rows FILE] ROOT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	root := flag.Arg(0)

	selfTest(root)
	byKind := checkCRDs(root)
	docs := fileDocs(root, "manifests/examples", "*", "accept")
	check(len(docs) >= 4, fmt.Sprintf("at least 4 example documents (%d)", len(docs)))
	bad := fileDocs(root, "test/data/bad", "*.yaml", "reject")
	check(len(bad) >= 10, fmt.Sprintf("at least 10 bad documents (%d)", len(bad)))
	docs = append(docs, bad...)
	if *rows != "" {
		docs = append(docs, parityRows(*rows)...)
	}
	for _, d := range docs {
		checkDocument(byKind, *spacectl, d)
	}
	fmt.Printf("crdcheck: %d documents; %d passed, %d failed\n", len(docs), passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
