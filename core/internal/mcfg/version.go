package mcfg

// DefaultControllerVersion is the generated-by-controller-version
// annotation of what the controllers generate, unless told otherwise.
const DefaultControllerVersion = "machina"
