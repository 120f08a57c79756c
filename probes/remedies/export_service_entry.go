package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// ExportServiceEntry adds the caller's namespace to the exportTo of the
// ServiceEntry that declares a host the caller cannot see.
type ExportServiceEntry struct{}

func (ExportServiceEntry) Meta() Meta {
	return Meta{
		ID:     "export-service-entry",
		Causes: []string{"serviceentry.missing"},
		Does:   "adds the caller's namespace to the hidden ServiceEntry's exportTo (JSON patch)",
	}
}

func (ExportServiceEntry) Compute(ctx context.Context, in *Input) Output {
	hidden, _ := in.Facts["se_hidden_hosts"].([]string)
	if len(hidden) == 0 {
		return unpatchable("the service-entry step finds no ServiceEntry hidden from the caller: the host has none (the direction before)")
	}
	cfg, caller, _, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	var out Output
	var notes []string
	for _, host := range hidden {
		done := false
		for _, se := range cfg.ServiceEntries {
			if !mesh.ServiceEntryDeclares(se, host) || cfg.ServiceEntryExportedTo(se, caller.Namespace) {
				continue
			}
			op := patch.Add("/spec/exportTo/-", caller.Namespace)
			if len(se.Spec.GetExportTo()) == 0 {
				// The mesh's default export hides it: keep what it had and add the caller.
				op = patch.Add("/spec/exportTo", []string{".", caller.Namespace})
			}
			p, err := change(objectOf(istioNetworking, "ServiceEntry", se), se, op)
			if err != nil {
				return unpatchable("the change of ServiceEntry %s/%s does not apply: %v", se.Namespace, se.Name, err)
			}
			out.Patches = append(out.Patches, p)
			notes = append(notes, fmt.Sprintf("ServiceEntry %s/%s (%s) to %s", se.Namespace, se.Name, host, caller.Namespace))
			done = true
			break
		}
		if !done {
			return unpatchable("the ServiceEntry that declares %s is in a namespace the triage did not read", host)
		}
	}
	out.Note = "The patch exports " + strings.Join(notes, ", ") + "; the namespaces it was exported to keep it."
	return out
}
