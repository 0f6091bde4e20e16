// Package virtualnode is a machina driver whose VMs are Node objects in the
// target cluster: CreateMachine registers a Node and a heartbeat keeps it
// Ready, as a kubelet would. The whole machine lifecycle (create, join,
// health, drain, delete, roll) thus runs against any API server, without a
// cloud, for demos, end-to-end tests and scale benchmarks.
//
// # Target cluster
//
// The Nodes live in the cluster of the kubeconfig in the request's secret
// key "kubeconfig" when it is present, else in Options.Target (the driver
// binary fills it from --target-kubeconfig, else $KUBECONFIG, else the
// in-cluster configuration). Clients are cached per kubeconfig, for the life
// of the process. The heartbeat serves every cluster the driver has a client
// for: after a restart, the Nodes of a cluster known only from request
// secrets get heartbeats again with the first request for that cluster.
//
// # Nodes
//
// A VM is the Node named after the machine, with spec.providerID
// "virtualnode://<namespace>/<name>/<incarnation>", where the incarnation is
// random per Node, so that a VM created after the deletion of another of the
// same name gets a new provider ID. The driver marks its Nodes with the
// labels LabelClass and LabelClassNamespace (the machine class, which is how
// ListMachines finds them) and the annotations AnnotationMachine
// ("<namespace>/<name>"), AnnotationClassName, AnnotationProviderSpecHash and
// AnnotationReadyAfter. A Node without these marks, or with another machine,
// class or provider spec, is not the VM of the machine: CreateMachine
// answers ALREADY_EXISTS for it, GetMachineStatus NOT_FOUND, and
// DeleteMachine leaves it alone. A Node being deleted (a finalizer may keep
// it) is a VM that is gone; a CreateMachine for its name answers ABORTED
// until it has disappeared, as the new Node needs its name.
//
// The Node starts with the labels and taints of Machine.node_template (as a
// kubelet registers with its configured labels and taints), the well-known
// labels derived from MachineClass.node_template (instance type, region,
// zone, architecture) and "kubernetes.io/hostname". Its capacity and
// allocatable come from MachineClass.node_template.capacity, overridden per
// resource by the provider spec's "capacity"; without either a Node has 2
// CPUs, 4Gi of memory and 110 pods. Its addresses are a made-up InternalIP in
// 10.0.0.0/8 and its Hostname.
//
// # Provider spec
//
// A JSON object with two optional keys, all others are ignored:
//
//	{"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}, "bootDelay": "20s"}
//
// bootDelay (a Go duration, default "0s") is how long the Node reports
// Ready=False with reason "Booting" after its creation.
//
// A third optional key, "inPlaceUpdate", makes the driver play the node
// agent of the class's Nodes for in-place updates (off without it):
//
//	{"inPlaceUpdate": {"duration": "5s", "failureRate": 0.1}}
//
// A fourth, "machineConfig" (same shape), makes it play the agent's side of
// the MachineConfig handshake (machineconfig.go; docs/machine-config.md):
// Working, a drain request, the duration once the drain is acknowledged,
// the uncordon request, then currentConfig and Done, or Degraded with the
// failure rate.
//
// The Node is created with the annotations AnnotationInPlaceUpdateDuration
// and AnnotationInPlaceFailureRate. When its InPlaceUpdate condition has
// reason ReadyForUpdate and its annotation inplace.machina.io/desired
// differs from inplace.machina.io/current, the driver waits duration
// (default 0s) and reports the result as machina-node-agent does: label
// node.machine.sapcloud.io/update-result=successful and current=desired
// (removing node.machine.sapcloud.io/update-failed-reason), or, with
// probability failureRate (default 0), update-result=failed with a reason.
// A target that is current already is reported at once. A failed Node is
// left alone until its update-result label is removed or its target
// changes. With Options.WatchNodes it reacts to every change of the Node;
// without, at its heartbeats.
//
// # Heartbeat
//
// Run is the kubelet of every Node of the driver. Each Node has its own
// schedule in a delaying work queue, and Options.Workers goroutines beat the
// Nodes whose time has come: a Node at the end of its boot (it was created
// with its NotReady conditions, so it needs no beat before, unless its boot
// is longer than an interval), then every Options.HeartbeatInterval, and at
// once when its AnnotationSimulate changes (with Options.WatchNodes). The
// Nodes already in a cluster when Run starts (the driver restarted) get
// their first beat at a random point of the interval, so that they do not
// all beat at once.
//
// A beat renews the Node's Lease in "kube-node-lease", owned by the Node
// (created on the Node's first beat, or taken over when one exists, then
// patched), and writes the conditions through the status subresource
// (Ready, MemoryPressure, DiskPressure, PIDPressure and NetworkUnavailable)
// when they change or the last heartbeat is half an interval old. It
// patches conditions only: labels, annotations and taints belong to the
// core. A Node that is gone or has a deletion timestamp drops out of the
// schedule: its VM is gone. With Options.WatchNodes a beat reads the Node
// from the informer's cache instead of the API server.
//
// The driver stands for many independent kubelets, which would each have a
// client of their own, so its client per target cluster allows
// Options.KubeAPIQPS (DefaultKubeAPIQPS) requests per second.
//
// Failures are simulated with the annotation AnnotationSimulate on a Node,
// a comma-separated list of:
//
//	NotReady          Ready=False, reason "Simulated"
//	ReadyUnknown      Ready=Unknown and no more Lease renewals (a dead kubelet)
//	DiskPressure      that condition True (likewise MemoryPressure,
//	                  PIDPressure, NetworkUnavailable)
//	<OtherType>       a condition of that type True, e.g. ReadonlyFilesystem
//
// Removing a value restores health on the next heartbeat. With
// Options.WatchNodes, an informer makes the heartbeat react at once when the
// annotation changes, instead of at the next interval.
//
// # Volumes
//
// GetVolumeIDs maps CSI volumes of the driver CSIDriverName
// ("virtualnode.csi.machina.io") to their volume handles and leaves every
// other volume out.
package virtualnode
