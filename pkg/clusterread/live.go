package clusterread

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Live reads a managed object from the label-filtered cache. A cache miss
// only means "not labelled as ours", never "absent": the object may exist
// unlabelled (pre-created, or the label removed by a user), and its
// opt-out or patch annotations must still be honoured, so a miss falls
// back to one direct read.
func (l *Reader) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	u := unstructuredOf(gvk)
	err := l.Get(ctx, key, u)
	if err == nil {
		return u, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	u = unstructuredOf(gvk)
	if err := l.direct.Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}

// Owned reads only the label-filtered cache: what the autopilot created
// carries its label, so a miss is "nothing of ours" at no API cost.
func (l *Reader) Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := unstructuredOf(gvk)
	if err := l.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}
