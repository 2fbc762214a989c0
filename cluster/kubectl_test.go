package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The pod a worker runs in: not privileged (only WorkerCapabilities, no
// service-account token), stdin kept open once for the protocol, the spec
// mounted from its ConfigMap, labelled with the run so Close deletes
// exactly its own.
func TestKubectlManifest(t *testing.T) {
	k := &Kubectl{Image: "localhost/hymn:dev", run: "0123456789abcdef"}
	data, err := k.manifest("hymn-0123456789abcdef-w1", []byte(`{"topology":"linear,2"}`))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
			Spec struct {
				RestartPolicy                string `json:"restartPolicy"`
				AutomountServiceAccountToken *bool  `json:"automountServiceAccountToken"`
				Containers                   []struct {
					Image           string         `json:"image"`
					ImagePullPolicy string         `json:"imagePullPolicy"`
					Args            []string       `json:"args"`
					Stdin           bool           `json:"stdin"`
					StdinOnce       bool           `json:"stdinOnce"`
					SecurityContext map[string]any `json:"securityContext"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Kind != "ConfigMap" || list.Items[1].Kind != "Pod" {
		t.Fatalf("%s", data)
	}
	if list.Items[0].Data["spec.json"] != `{"topology":"linear,2"}` {
		t.Errorf("configmap data %v", list.Items[0].Data)
	}
	pod := list.Items[1]
	c := pod.Spec.Containers[0]
	sc, err := json.Marshal(c.SecurityContext)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker container securityContext: %s", sc)
	if string(sc) != `{"appArmorProfile":{"type":"Unconfined"},"capabilities":{"add":["NET_ADMIN","NET_RAW","SYS_ADMIN","SYS_NICE"],"drop":["ALL"]},"privileged":false,"seccompProfile":{"type":"RuntimeDefault"}}` {
		t.Errorf("securityContext %s", sc)
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false", a)
	}
	if !c.Stdin || !c.StdinOnce || c.ImagePullPolicy != "Never" ||
		strings.Join(c.Args, " ") != "worker --spec /spec/spec.json" || pod.Spec.RestartPolicy != "Never" {
		t.Errorf("pod %+v", pod)
	}
	if pod.Metadata.Labels["hymn.dev/run"] != "0123456789abcdef" {
		t.Errorf("labels %v", pod.Metadata.Labels)
	}
}

func TestKubectlBadOptions(t *testing.T) {
	spec := &Spec{Topology: "linear,2", Workers: 1, Assign: map[string]int{}}
	for _, tc := range []struct {
		k    *Kubectl
		want string
	}{
		{&Kubectl{}, "no worker image"},
		{&Kubectl{Image: "x", Namespace: "Bad_NS"}, `namespace "Bad_NS" is not a DNS label`},
		{&Kubectl{Image: "x", PullPolicy: "Sometimes"}, `pull policy "Sometimes"`},
	} {
		if _, err := tc.k.Launch(context.Background(), spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.k, err, tc.want)
		}
		if err := tc.k.Close(); err != nil {
			t.Errorf("Close after a refused launch: %v", err)
		}
	}
}
