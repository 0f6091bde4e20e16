package main

import "github.com/machina-io/machina/core/api/v1alpha1"

// machina's target identity on the Node (docs/in-place-updates.md): what the
// node must become, written by the core, and what it last applied
// successfully, written by the agent together with update-result=successful.
const (
	annotationDesired = v1alpha1.AnnotationKeyNodeDesired
	annotationCurrent = v1alpha1.AnnotationKeyNodeCurrent
)
