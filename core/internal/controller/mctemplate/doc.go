// Package mctemplate is the template controller of machine configuration
// (MCO's TemplateController, docs/machine-config.md "Templates").
//
// From the ControllerConfig named machine-config-controller it:
//
//   - creates the pools master and worker when they are missing (pools.go),
//     with MCO's labels and selectors;
//   - renders the built-in templates (templates.go, templates/) for every
//     role: master, worker, and each other pool's name. Each role gets
//     01-<role>-kubelet: the kubelet's base /etc/kubernetes/kubelet.conf
//     (clusterDNS and clusterDomain from the ControllerConfig), its unit,
//     and the node-sizing service and its default file;
//   - writes them (write.go), controlled by the ControllerConfig, and
//     writes them back when someone edits or deletes them; a MachineConfig
//     of the same name that the ControllerConfig does not control is not
//     touched (a failure); the base MachineConfigs of a role whose pool is
//     gone are deleted;
//   - reports TemplateControllerCompleted or TemplateControllerFailing in
//     the ControllerConfig's status, written through setup.Patcher with the
//     ControllerConfig's resourceVersion, only when it changed; a conflict
//     is setup.RequeueOnConflict's: synced again soon, no error.
package mctemplate
