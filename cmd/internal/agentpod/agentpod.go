// Package agentpod stands in for the kubelet where there is none (the demo,
// envtest): it creates the pod that the node agent's DaemonSet would run on
// a Node and a ServiceAccount token bound to that pod, which is what the
// agent's identity is in a cluster. The API server puts the pod's Node in
// such a token (the user extra authentication.kubernetes.io/node-name), and
// the node configuration server and the own-node admission policy go by it.
package agentpod

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Token returns a token of the ServiceAccount of ds bound to a pod of ds on
// node, creating the pod when it does not exist. The pod is owned by the
// DaemonSet ds, which must exist: a drain leaves it alone, as it leaves a
// real agent's pod, and deleting it would end the token.
func Token(ctx context.Context, c client.Client, cs kubernetes.Interface, ds *appsv1.DaemonSet, node string, lifetime time.Duration) (string, error) {
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: ds.Namespace, Name: ds.Name + "-" + node}
	err := c.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: key.Namespace, Name: key.Name, Labels: ds.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: corev1.PodSpec{
				NodeName:                     node,
				ServiceAccountName:           ds.Spec.Template.Spec.ServiceAccountName,
				AutomountServiceAccountToken: ptr.To(false),
				Tolerations:                  ds.Spec.Template.Spec.Tolerations,
				Containers:                   []corev1.Container{{Name: "agent", Image: ds.Spec.Template.Spec.Containers[0].Image}},
			},
		}
		err = c.Create(ctx, pod)
	}
	if err != nil {
		return "", fmt.Errorf("the node agent's pod on %s: %w", node, err)
	}
	seconds := int64(lifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ds.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token bound to pod %s: %w", key, err)
	}
	return tr.Status.Token, nil
}
