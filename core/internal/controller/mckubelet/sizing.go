package mckubelet

import (
	"fmt"
	"strconv"
)

// NodeSizingEnvPath is the file the kubelet's auto-sizing unit reads
// (MCO's name): whether to compute the system reservation from the node's
// capacity, and the fixed reservation otherwise. The template controller
// writes the default (disabled); a KubeletConfig overrides it.
const NodeSizingEnvPath = "/etc/node-sizing-enabled.env"

// systemReservedKeys are the systemReserved resources that go through the
// node-sizing file rather than kubelet.conf: the kubelet unit passes them
// as --system-reserved, which overrides the configuration file, so MCO
// moves them there.
var systemReservedKeys = []struct{ resource, env, def string }{
	{"memory", "SYSTEM_RESERVED_MEMORY", "1Gi"},
	{"cpu", "SYSTEM_RESERVED_CPU", "500m"},
	{"ephemeral-storage", "SYSTEM_RESERVED_ES", "1Gi"},
}

// nodeSizingEnv is the node-sizing file of a KubeletConfig, or nil when it
// sets neither autoSizingReserved nor systemReserved's memory, cpu or
// ephemeral-storage (the template's file stays). It takes those out of
// user's systemReserved, as MCO does.
func nodeSizingEnv(autoSizing *bool, user map[string]any) []byte {
	reserved, _ := user["systemReserved"].(map[string]any)
	own := map[string]string{}
	for _, k := range systemReservedKeys {
		if v, ok := reserved[k.resource].(string); ok {
			own[k.resource] = v
			delete(reserved, k.resource)
		}
	}
	if reserved != nil && len(reserved) == 0 {
		delete(user, "systemReserved")
	}
	if autoSizing == nil && len(own) == 0 {
		return nil
	}
	// Reservations of the user's own turn auto-sizing off (validation
	// refuses both together).
	enabled := autoSizing != nil && *autoSizing && len(own) == 0
	out := "NODE_SIZING_ENABLED=" + strconv.FormatBool(enabled) + "\n"
	for _, k := range systemReservedKeys {
		v := own[k.resource]
		if v == "" {
			v = k.def
		}
		out += fmt.Sprintf("%s=%s\n", k.env, v)
	}
	return []byte(out)
}
