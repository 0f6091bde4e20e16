package machineset

import (
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
)

// machineNameSuffixLength is the length of the random part of a machine name.
const machineNameSuffixLength = 5

// newMachineName returns "<set name>-<5 random characters>", cutting the set
// name so that the result stays a valid object name. The random characters
// come from rand.String, which avoids vowels and look-alike characters.
func newMachineName(setName string) string {
	maxPrefix := validation.DNS1123SubdomainMaxLength - 1 - machineNameSuffixLength
	if len(setName) > maxPrefix {
		setName = setName[:maxPrefix]
	}
	return setName + "-" + rand.String(machineNameSuffixLength)
}
