package wasm

import (
	"encoding/binary"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// The compact encodings the host functions write into guest memory (see README.md, "Encodings").
// Strings are a uvarint length followed by the bytes; integers are little-endian int64.

// GPUResource is the extended resource reported as Resources.GPU.
const GPUResource v1.ResourceName = "nvidia.com/gpu"

const resourcesSize = 32

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendLabels: key, value, key, value … (map order; the guest must not rely on an order).
func appendLabels(dst []byte, labels map[string]string) []byte {
	for k, v := range labels {
		dst = appendString(appendString(dst, k), v)
	}
	return dst
}

// appendResources: millicores of cpu, bytes of memory, whole nvidia.com/gpu, pods.
func appendResources(dst []byte, rl v1.ResourceList, pods int64) []byte {
	var gpu int64
	if q, ok := rl[GPUResource]; ok {
		gpu = q.Value()
	}
	if q, ok := rl[v1.ResourcePods]; ok {
		pods = q.Value()
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(rl.Cpu().MilliValue()))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(rl.Memory().Value()))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(gpu))
	return binary.LittleEndian.AppendUint64(dst, uint64(pods))
}

func taintEffect(e v1.TaintEffect) byte {
	switch e {
	case v1.TaintEffectNoSchedule:
		return 0
	case v1.TaintEffectPreferNoSchedule:
		return 1
	case v1.TaintEffectNoExecute:
		return 2
	}
	return 255
}

// appendTaints: key, value, one effect byte (0 NoSchedule, 1 PreferNoSchedule, 2 NoExecute, 255 other).
func appendTaints(dst []byte, taints []v1.Taint) []byte {
	for i := range taints {
		dst = appendString(appendString(dst, taints[i].Key), taints[i].Value)
		dst = append(dst, taintEffect(taints[i].Effect))
	}
	return dst
}

// appendScores: node name, then its score as int64.
func appendScores(dst []byte, scores fwk.NodeScoreList) []byte {
	for i := range scores {
		dst = appendString(dst, scores[i].Name)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(scores[i].Score))
	}
	return dst
}

// podRequests are the pod's effective requests as the scheduler's fit plugin computes them
// (containers, init containers, pod overhead).
func podRequests(pod *v1.Pod) []byte {
	return appendResources(make([]byte, 0, resourcesSize), resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), 1)
}
