package envoy

import (
	"bytes"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// Sample is one sample of /stats/prometheus: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of /stats/prometheus by metric name.
type Metrics map[string][]Sample

// ParsePrometheus reads the Prometheus text Envoy serves on
// /stats/prometheus (and the sidecar's merged :15020/stats/prometheus).
// Envoy before 1.15 did not keep a family's samples together (a family's
// samples reappear after other families, the TYPE line only before the
// first); they are gathered under their name all the same. The
// cluster_name label is normalised (package clustername).
func ParsePrometheus(data []byte) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("malformed Prometheus text: %w", err)
	}
	out := make(Metrics, len(families))
	for name, f := range families {
		samples := make([]Sample, 0, len(f.GetMetric()))
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if c, ok := labels["cluster_name"]; ok {
				labels["cluster_name"] = clustername.Name(c)
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			case m.GetSummary() != nil:
				v = float64(m.GetSummary().GetSampleCount())
			}
			samples = append(samples, Sample{Labels: labels, Value: v})
		}
		out[name] = samples
	}
	return out, nil
}

// Sum adds the values of metric's samples that match.
func (m Metrics) Sum(metric string, match func(labels map[string]string) bool) float64 {
	var n float64
	for _, s := range m[metric] {
		if match(s.Labels) {
			n += s.Value
		}
	}
	return n
}
