package manager

import (
	"encoding/json"
	"flag"
	"net/http"
)

// configzHandler serves /configz on the metrics server, as MCM does: the
// manager's effective configuration, as JSON, keyed by flag name, each value
// as the flag prints it (defaults, environment and command line applied).
// It is built from the flags, not from Options, so that what it shows is
// exactly what an operator can set: kubeconfig paths appear, never a
// kubeconfig's contents, a token or any other secret (Options also holds
// REST configurations with credentials, which are no flags).
func configzHandler(o Options) http.Handler {
	fs := flag.NewFlagSet("configz", flag.ContinueOnError)
	// AddFlags registers o's current values as the defaults; the copy keeps
	// the manager's own Options out of reach of the flag set.
	c := o
	c.AddFlags(fs)
	values := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { values[f.Name] = f.Value.String() })
	body, err := json.MarshalIndent(map[string]map[string]string{"machina-manager": values}, "", "  ")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err != nil {
			http.Error(w, "configz: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// withConfigz adds /configz to the metrics server's extra handlers.
func withConfigz(handlers map[string]http.Handler, o Options) map[string]http.Handler {
	if handlers == nil {
		handlers = map[string]http.Handler{}
	}
	handlers["/configz"] = configzHandler(o)
	return handlers
}
