package nodeconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// Server answers a node agent's reads of its own configuration. It holds
// no state: every request is authenticated, authorized and answered from
// the API server, so what it serves is never older than the Node's
// annotations the agent just saw.
type Server struct {
	// Reader reads Nodes, MachineConfigs and pools live from the cluster
	// of the Nodes (an API reader, not a cache: a cache may not yet hold
	// the rendered configuration the agent was just told about).
	Reader client.Reader
	// Reviews creates TokenReviews and SubjectAccessReviews on that
	// cluster.
	Reviews client.Client
	// Log gets a line per refused request; never a token.
	Log logr.Logger
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+machineConfigsPath+"{name}", s.machineConfig)
	mux.HandleFunc("GET "+poolsPath+"{name}", s.pool)
	return mux
}

// machineConfig serves a rendered MachineConfig that the caller's Node
// names in its desiredConfig or currentConfig annotation.
func (s *Server) machineConfig(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	node, ok := s.authorize(w, r, "machineconfigs", name)
	if !ok {
		return
	}
	if !slices.Contains(namedConfigs(node), name) {
		s.refuse(w, r, http.StatusForbidden, "node %s names no MachineConfig %s in its %s or %s annotation",
			node.Name, name, mcv1.DesiredConfigAnnotation, mcv1.CurrentConfigAnnotation)
		return
	}
	s.serve(w, r, name, &mcv1.MachineConfig{})
}

// pool serves the MachineConfigPool that a rendered MachineConfig of the
// caller's Node was rendered for (its nodeDisruptionPolicy says how the
// agent activates a change).
func (s *Server) pool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	node, ok := s.authorize(w, r, "machineconfigpools", name)
	if !ok {
		return
	}
	pools, err := s.poolsOf(r.Context(), node)
	if err != nil {
		s.refuse(w, r, http.StatusServiceUnavailable, "reading the rendered MachineConfigs of node %s: %v", node.Name, err)
		return
	}
	if !slices.Contains(pools, name) {
		s.refuse(w, r, http.StatusForbidden, "no rendered MachineConfig of node %s was rendered for MachineConfigPool %s",
			node.Name, name)
		return
	}
	s.serve(w, r, name, &mcv1.MachineConfigPool{})
}

// serve writes the object name as JSON, or 404 when it does not exist.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, name string, obj client.Object) {
	if err := s.Reader.Get(r.Context(), client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			s.refuse(w, r, http.StatusNotFound, "%s not found", name)
			return
		}
		s.refuse(w, r, http.StatusServiceUnavailable, "reading %s: %v", name, err)
		return
	}
	obj.SetManagedFields(nil)
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(obj); err != nil {
		s.Log.Error(err, "Writing a node's configuration", "path", r.URL.Path)
	}
}

// refuse answers with status and a message that says why. The message
// names objects, never a token.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.Log.V(1).Info("Refused a node configuration read", "path", r.URL.Path, "status", status, "reason", msg)
	http.Error(w, msg, status)
}

// namedConfigs is what node's annotations name: its desired and its current
// rendered MachineConfig.
func namedConfigs(node *corev1.Node) []string {
	var names []string
	for _, key := range []string{mcv1.DesiredConfigAnnotation, mcv1.CurrentConfigAnnotation} {
		if v := node.Annotations[key]; v != "" {
			names = append(names, v)
		}
	}
	return names
}

// poolsOf returns the pools node's named MachineConfigs were rendered for.
func (s *Server) poolsOf(ctx context.Context, node *corev1.Node) ([]string, error) {
	var pools []string
	for _, name := range namedConfigs(node) {
		mc := &mcv1.MachineConfig{}
		if err := s.Reader.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if p := mc.Annotations[mcv1.RenderedFromPoolAnnotation]; p != "" {
			pools = append(pools, p)
		}
		for _, ref := range mc.OwnerReferences {
			if ref.Kind == "MachineConfigPool" {
				pools = append(pools, ref.Name)
			}
		}
	}
	return pools, nil
}

// bearerToken returns the request's bearer token, or "".
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if token, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(token)
	}
	return ""
}

var errNoToken = errors.New("no bearer token")
