package remedies

import (
	"context"
	"strings"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// ExportService adds the caller's namespace to the Service's
// networking.istio.io/exportTo annotation when that, or the mesh's
// defaultServiceExportTo, hides the Service from the caller.
type ExportService struct{}

const exportToAnnotation = "networking.istio.io/exportTo"

func (ExportService) Meta() Meta {
	return Meta{
		ID:     "export-service",
		Causes: []string{"config.not-visible"},
		Does:   "adds the caller's namespace to the Service's networking.istio.io/exportTo annotation (merge patch)",
	}
}

func (ExportService) Compute(ctx context.Context, in *Input) Output {
	cfg, caller, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	hidden := false
	for _, v := range views {
		hidden = hidden || !v.Visibility.Visible && strings.HasPrefix(v.Visibility.HiddenBy, "Service ")
	}
	if !hidden {
		return unpatchable("the Service's exportTo does not hide it from %s: the caller's Sidecar egress hosts do (next direction)", caller.Namespace)
	}
	svc := sd.Service
	current := cfg.ServiceExportTo(svc)
	var next []string
	for _, e := range current {
		if e != "~" {
			next = append(next, e)
		}
	}
	next = append(next, caller.Namespace)
	modified := svc.DeepCopy()
	if modified.Annotations == nil {
		modified.Annotations = map[string]string{}
	}
	modified.Annotations[exportToAnnotation] = strings.Join(next, ",")
	op := patch.Add(patch.Pointer("metadata", "annotations", exportToAnnotation), modified.Annotations[exportToAnnotation])
	if svc.Annotations == nil {
		op = patch.Add("/metadata/annotations", map[string]string{exportToAnnotation: modified.Annotations[exportToAnnotation]})
	}
	p, err := change(objectOf(coreV1, "Service", svc), svc, op)
	if err != nil {
		return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: "The patch sets " + exportToAnnotation + " to " + modified.Annotations[exportToAnnotation] + " (it was " + strings.Join(current, ",") + "): the namespaces it was exported to keep it."}
}
