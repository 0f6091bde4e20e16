package nodeconfig

import (
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// authorize answers who calls and whether it may read resource name: the
// caller's bearer token must be accepted by the API server (TokenReview),
// bound to a pod on a Node (the token names that Node), and the caller
// allowed to get resource/node-config name (SubjectAccessReview). It
// returns the caller's Node, or writes the refusal and returns false.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, resource, name string) (*corev1.Node, bool) {
	ctx := r.Context()
	token := bearerToken(r)
	if token == "" {
		s.refuse(w, r, http.StatusUnauthorized, "%v: send the node agent's ServiceAccount token", errNoToken)
		return nil, false
	}
	review := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
	if err := s.Reviews.Create(ctx, review); err != nil {
		s.refuse(w, r, http.StatusServiceUnavailable, "reviewing the token: %v", apierrors.ReasonForError(err))
		return nil, false
	}
	if !review.Status.Authenticated {
		s.refuse(w, r, http.StatusUnauthorized, "the API server does not accept the token")
		return nil, false
	}
	user := review.Status.User
	nodes := user.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		s.refuse(w, r, http.StatusForbidden, "the token of %s names no Node (%s): "+
			"only a ServiceAccount token bound to a pod on a Node may read a node's configuration", user.Username, NodeNameExtra)
		return nil, false
	}
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	access := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Group: group, Resource: resource, Subresource: Subresource, Verb: "get", Name: name,
		},
	}}
	if err := s.Reviews.Create(ctx, access); err != nil {
		s.refuse(w, r, http.StatusServiceUnavailable, "reviewing access: %v", apierrors.ReasonForError(err))
		return nil, false
	}
	if !access.Status.Allowed {
		s.refuse(w, r, http.StatusForbidden, "%s may not get %s/%s %s", user.Username, resource, Subresource, name)
		return nil, false
	}
	node := &corev1.Node{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: nodes[0]}, node); err != nil {
		if apierrors.IsNotFound(err) {
			s.refuse(w, r, http.StatusForbidden, "node %s, named by the token, does not exist", nodes[0])
			return nil, false
		}
		s.refuse(w, r, http.StatusServiceUnavailable, "reading node %s: %v", nodes[0], err)
		return nil, false
	}
	return node, true
}
