package machineconfig

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// account is a user of the node's /etc/passwd.
type account struct {
	uid, gid int
	home     string
}

// lookupUser finds name in the node's /etc/passwd (under root): the node's
// own users, not the agent's container's.
func lookupUser(root *durable.Root, name string) (account, error) {
	fields, err := lookupLine(root, "/etc/passwd", name, 7)
	if err != nil {
		return account{}, err
	}
	uid, err1 := strconv.Atoi(fields[2])
	gid, err2 := strconv.Atoi(fields[3])
	if err1 != nil || err2 != nil {
		return account{}, fmt.Errorf("/etc/passwd: user %s has a malformed uid or gid", name)
	}
	return account{uid: uid, gid: gid, home: fields[5]}, nil
}

// lookupGroup finds a group's gid in the node's /etc/group.
func lookupGroup(root *durable.Root, name string) (int, error) {
	fields, err := lookupLine(root, "/etc/group", name, 3)
	if err != nil {
		return 0, err
	}
	gid, err := strconv.Atoi(fields[2])
	if err != nil {
		return 0, fmt.Errorf("/etc/group: group %s has a malformed gid", name)
	}
	return gid, nil
}

// lookupLine returns the colon-separated fields of the line of file (a
// node path) whose first field is name, with at least n fields.
func lookupLine(root *durable.Root, file, name string, n int) ([]string, error) {
	f, err := root.Open(file)
	if isNotExist(err) {
		return nil, fmt.Errorf("the node has no %s", file)
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Split(s.Text(), ":")
		if len(fields) >= n && fields[0] == name {
			return fields, nil
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return nil, fmt.Errorf("no %q in the node's %s", name, file)
}
