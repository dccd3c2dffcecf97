package impact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// VMI is what a rollout's impact reads of a KubeVirt
// VirtualMachineInstance. A page of VMIs decodes into these few fields
// only: a VMI's status (interfaces, volumes, guest info) and managed
// fields run to kilobytes, and decoding each field into a map made a
// 5,000-VMI count cost a second of CPU and tens of MiB of heap.
type VMI struct {
	Metadata VMIMeta   `json:"metadata"`
	Spec     VMISpec   `json:"spec"`
	Status   VMIStatus `json:"status"`
}

// VMIMeta is the VMI's identity and whether it is being deleted.
type VMIMeta struct {
	Namespace         string       `json:"namespace,omitempty"`
	Name              string       `json:"name,omitempty"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
}

// VMISpec is the VMI's own eviction strategy.
type VMISpec struct {
	EvictionStrategy string `json:"evictionStrategy,omitempty"`
}

// VMIStatus is where the VMI runs and whether it can migrate.
type VMIStatus struct {
	NodeName   string         `json:"nodeName,omitempty"`
	Phase      string         `json:"phase,omitempty"`
	Conditions []VMICondition `json:"conditions,omitempty"`
}

// VMICondition is one of the VMI's conditions.
type VMICondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// VMIList is a page of VMIs.
type VMIList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VMI `json:"items"`
}

// DeepCopyObject is runtime.Object's.
func (l *VMIList) DeepCopyObject() runtime.Object {
	out := &VMIList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	out.Items = make([]VMI, len(l.Items))
	for i, v := range l.Items {
		out.Items[i] = v
		if v.Metadata.DeletionTimestamp != nil {
			out.Items[i].Metadata.DeletionTimestamp = v.Metadata.DeletionTimestamp.DeepCopy()
		}
		out.Items[i].Status.Conditions = append([]VMICondition(nil), v.Status.Conditions...)
	}
	return out
}

// AddToScheme registers VMIList under KubeVirt's group version, so a
// client built on the scheme decodes VMI pages into it.
func AddToScheme(s *runtime.Scheme) error {
	gv := VMIGVK.GroupVersion()
	s.AddKnownTypeWithName(gv.WithKind(VMIGVK.Kind+"List"), &VMIList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
