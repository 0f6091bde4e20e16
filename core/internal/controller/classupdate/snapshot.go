package classupdate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/driverclass"
)

// Snapshots of class contents are ControllerRevisions, the Kubernetes kind
// for "an object's contents as they were, by hash" (StatefulSets and
// DaemonSets keep their history in them). Each is owned by its class, so it
// goes with it, and carries the class's name and the full hash as labels
// and annotations for lookup.
const (
	// snapshotHashLabel holds the first 63 characters of the contents hash
	// (a label value's limit); the annotation the full one.
	snapshotHashLabel      = "classupdate.machina.io/hash"
	snapshotHashAnnotation = "classupdate.machina.io/hash"
	// hashPrefixInName is how much of the hash a snapshot's name carries.
	hashPrefixInName = 16
)

// snapshotName is the name of the snapshot of class at hash: the class name
// (shortened to keep within 253 characters) and the hash's first characters.
func snapshotName(class, hash string) string {
	const maxName = 253 - 1 - hashPrefixInName
	if len(class) > maxName {
		class = class[:maxName]
	}
	return class + "-" + hash[:hashPrefixInName]
}

// snapshot keeps a snapshot of the class's current contents, and deletes
// the snapshots that neither the class nor any of its machines refer to.
func (r *Reconciler) snapshot(ctx context.Context, s *scope) (phase.Result, error) {
	if err := r.ensureSnapshot(ctx, s.class, s.hash); err != nil {
		return phase.Result{}, err
	}
	return phase.Result{}, r.pruneSnapshots(ctx, s)
}

func (r *Reconciler) ensureSnapshot(ctx context.Context, class *v1alpha1.MachineClass, hash string) error {
	name := snapshotName(class.Name, hash)
	existing := &appsv1.ControllerRevision{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: class.Namespace, Name: name}, existing)
	if err == nil || !apierrors.IsNotFound(err) {
		return client.IgnoreNotFound(err)
	}
	data, err := json.Marshal(driverclass.ContentsOf(class))
	if err != nil {
		return fmt.Errorf("encoding the contents of class %s: %w", class.Name, err)
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   class.Namespace,
			Labels:      map[string]string{snapshotHashLabel: hash[:63]},
			Annotations: map[string]string{snapshotHashAnnotation: hash},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineClass",
				Name: class.Name, UID: class.UID,
			}},
		},
		Data: runtime.RawExtension{Raw: data},
	}
	if err := r.Client.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the snapshot of class %s: %w", class.Name, err)
	}
	return nil
}

// loadSnapshot returns the class as it was at hash, or nil when there is no
// snapshot of it.
func (r *Reconciler) loadSnapshot(ctx context.Context, class *v1alpha1.MachineClass, hash string) (*v1alpha1.MachineClass, error) {
	if len(hash) < hashPrefixInName {
		return nil, nil
	}
	rev := &appsv1.ControllerRevision{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: class.Namespace, Name: snapshotName(class.Name, hash)}, rev)
	if apierrors.IsNotFound(err) || (err == nil && rev.Annotations[snapshotHashAnnotation] != hash) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading a snapshot of class %s: %w", class.Name, err)
	}
	var contents driverclass.Contents
	if err := json.Unmarshal(rev.Data.Raw, &contents); err != nil {
		return nil, fmt.Errorf("decoding snapshot %s: %w", rev.Name, err)
	}
	return contents.Class(class.Name, class.Namespace), nil
}

// pruneSnapshots deletes the class's snapshots whose hash is neither the
// current one nor that of a machine of the class, once older than
// Options.SnapshotRetention.
func (r *Reconciler) pruneSnapshots(ctx context.Context, s *scope) error {
	used := map[string]bool{s.hash: true}
	for _, m := range s.machines {
		used[m.Annotations[v1alpha1.ClassHashAnnotation]] = true
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(s.class.Namespace), client.HasLabels{snapshotHashLabel}); err != nil {
		return fmt.Errorf("listing the snapshots of class %s: %w", s.class.Name, err)
	}
	for i := range revs.Items {
		rev := &revs.Items[i]
		// A young snapshot is kept: a machine created from it may not be in
		// the cache yet.
		if !ownedBy(rev, s.class) || used[rev.Annotations[snapshotHashAnnotation]] ||
			time.Since(rev.CreationTimestamp.Time) < r.Options.SnapshotRetention {
			continue
		}
		if err := r.Client.Delete(ctx, rev); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting snapshot %s: %w", rev.Name, err)
		}
	}
	return nil
}

// ownedBy reports whether obj has an owner reference to class.
func ownedBy(obj metav1.Object, class *v1alpha1.MachineClass) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == class.UID {
			return true
		}
	}
	return false
}
