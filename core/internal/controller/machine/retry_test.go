package machine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// TestReactionTables compares every table in retry.go with the Driver
// API's error tables, read from docs/driver-api.md (spectable_test.go): the
// per-RPC tables of §6.1.4, §6.2.4, §6.3.4 and §6.4.4 for the codes they
// list, §7.2's general reactions for the others. Every gRPC code is checked
// in every table, so an edit of either side alone fails.
func TestReactionTables(t *testing.T) {
	doc, err := readDriverAPIDoc()
	require.NoError(t, err)
	prose := strings.Join(strings.Fields(doc), " ")
	general, err := generalTable(doc)
	require.NoError(t, err)

	oneColumn := []string{"Condition", "Code", "What the core does"}
	byFlow := []string{"Condition", "Code", "Creation", "Deletion"}

	// §6.4.4 says in prose what its table leaves out; the sentences are
	// checked, so that the rules below change with them.
	healthRule := "after any other code the Machine keeps its phase and the check is repeated after the period of the Creation column"
	deleteLookupRule := "a transient failure leaves the Machine at that step (`lastOperation {type: Delete, state: Failed}`); after any other failure the core goes on without a node name"
	for _, sentence := range []string{healthRule, deleteLookupRule} {
		require.True(t, strings.Contains(prose, sentence), "§6.4.4 no longer says %q; update the rules of this test and retry.go", sentence)
	}
	// A code the deletion column does not list: §7.2's reaction if that is
	// a short retry (a transient failure), else the flow goes on.
	deleteLookupOtherwise := func(r reaction) reaction {
		if r.retry == retryShort && !r.brokenDriver {
			return r
		}
		return reaction{proceed: true, warn: true}
	}

	cases := []struct {
		table    callTable
		heading  string
		header   []string
		column   string
		creation bool
		// otherwise adjusts §7.2's reaction for codes the table does not
		// list, where the section's prose says more.
		otherwise func(reaction) reaction
	}{
		{createMachineTable, "6.1.4 Errors", oneColumn, "What the core does", true, nil},
		{initializeMachineTable, "6.2.4 Errors", oneColumn, "What the core does", true, nil},
		{deleteMachineTable, "6.3.4 Errors", oneColumn, "What the core does", false, nil},
		{statusForCreateTable, "6.4.4 Errors", byFlow, "Creation", true, nil},
		// healthRule: the health check reacts as the Creation column.
		{statusForHealthTable, "6.4.4 Errors", byFlow, "Creation", true, nil},
		{statusForDeleteTable, "6.4.4 Errors", byFlow, "Deletion", false, deleteLookupOtherwise},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s (%s flow)", tc.table.rpc, tc.table.flow)
		listed, err := rpcRows(doc, tc.heading, tc.header, tc.column)
		require.NoError(t, err, name)
		rows := listed[tc.column]
		for code := codes.OK; code <= codes.Unauthenticated; code++ {
			want, ok := rows[code]
			source := "§" + strings.Fields(tc.heading)[0] + ", column " + tc.column
			switch {
			case code == codes.OK:
				want, source = reaction{proceed: true}, "OK is an answer"
			case !ok:
				want, err = generalReaction(general, code, tc.creation)
				require.NoError(t, err, name)
				source = "§7.2"
				if tc.otherwise != nil {
					want, source = tc.otherwise(want), "§7.2 and the prose of §"+strings.Fields(tc.heading)[0]
				}
			}
			assert.Equal(t, want, tc.table.react(code), "%s, code %s (%s)", name, code, source)
		}
	}
}

// TestErrorCodeTable compares §7.2's code numbers and errorCode spellings
// with gRPC's codes and with the controller's errorCodeName, which writes
// lastOperation.errorCode in the MCM / grpc-go spelling that
// cluster-autoscaler compares against.
func TestErrorCodeTable(t *testing.T) {
	doc, err := readDriverAPIDoc()
	require.NoError(t, err)
	rows, err := generalTable(doc)
	require.NoError(t, err)
	seen := map[codes.Code]bool{}
	for _, row := range rows {
		require.Len(t, row.numbers, len(row.codes), "§7.2 row %v: a number for each code", row.codes)
		for i, code := range row.codes {
			assert.Equal(t, int(code), row.numbers[i], "§7.2: the number of %s", code)
			want := row.errorCode
			if row.otherCode {
				require.Equal(t, "its name", want)
				want = code.String()
			}
			assert.Equal(t, want, errorCodeName(code), "§7.2: the errorCode of %s", code)
			assert.False(t, seen[code], "§7.2: %s in two rows", code)
			seen[code] = true
		}
	}
	// Every failure code has a row of its own or is one of "any other".
	for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
		if !seen[code] {
			r, err := generalReaction(rows, code, true)
			require.NoError(t, err)
			assert.Equal(t, reaction{retry: retryMedium}, r, "§7.2: %s falls to the row of any other code, as INTERNAL", code)
		}
	}
}

func TestRetryPeriods(t *testing.T) {
	o := Options{}.withDefaults()
	assert.Equal(t, 5*time.Second, o.after(retryShort))
	assert.Equal(t, 3*time.Minute, o.after(retryMedium))
	assert.Equal(t, 10*time.Minute, o.after(retryLong))
	assert.Equal(t, 10*time.Minute, o.after(retryResourceExhausted))

	o = Options{ShortRetry: time.Second, MediumRetry: 2 * time.Second, LongRetry: 3 * time.Second, ResourceExhaustedRetry: 4 * time.Second}.withDefaults()
	assert.Equal(t, time.Second, o.after(retryShort))
	assert.Equal(t, 2*time.Second, o.after(retryMedium))
	assert.Equal(t, 3*time.Second, o.after(retryLong))
	assert.Equal(t, 4*time.Second, o.after(retryResourceExhausted))
}
