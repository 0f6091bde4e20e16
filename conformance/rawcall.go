package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// rawClient makes unary gRPC calls over plain HTTP/2 (h2c), bypassing the
// gRPC client library. It exists for the deadline test (§10): a gRPC client
// gives up by itself when its deadline passes, so it cannot observe whether
// the driver honours the deadline it was sent. rawClient sends the deadline
// in the grpc-timeout header but waits longer, and measures when the driver
// answers.
type rawClient struct {
	client *http.Client
}

func newRawClient(endpoint string) (*rawClient, error) {
	dial, err := dialer(endpoint)
	if err != nil {
		return nil, err
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{
		Protocols: &protocols,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, "")
		},
	}
	return &rawClient{client: &http.Client{Transport: transport}}, nil
}

func (c *rawClient) close() { c.client.CloseIdleConnections() }

// errNoAnswer is returned when the driver did not answer before wait.
var errNoAnswer = errors.New("no answer")

// call sends req to fullMethod (e.g.
// "/machina.driver.v1alpha1.MachineService/CreateMachine") with deadline
// sent as grpc-timeout, waits up to wait for the answer, and returns the
// gRPC status code and message the driver sent.
func (c *rawClient) call(fullMethod string, req proto.Message, deadline, wait time.Duration) (codes.Code, string, error) {
	msg, err := proto.Marshal(req)
	if err != nil {
		return codes.Unknown, "", err
	}
	// A gRPC message frame: a compression flag byte and a big-endian
	// length, then the message.
	frame := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
	copy(frame[5:], msg)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+fullMethod, bytes.NewReader(frame))
	if err != nil {
		return codes.Unknown, "", err
	}
	httpReq.Header.Set("Content-Type", "application/grpc")
	httpReq.Header.Set("TE", "trailers")
	httpReq.Header.Set("grpc-timeout", encodeGRPCTimeout(deadline))
	resp, err := c.client.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return codes.Unknown, "", errNoAnswer
		}
		return codes.Unknown, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		if ctx.Err() != nil {
			return codes.Unknown, "", errNoAnswer
		}
		return codes.Unknown, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return codes.Unknown, "", fmt.Errorf("HTTP status %s", resp.Status)
	}
	// A "trailers-only" answer carries the status in the headers.
	st, m := resp.Trailer.Get("grpc-status"), resp.Trailer.Get("grpc-message")
	if st == "" {
		st, m = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	code, err := strconv.ParseUint(st, 10, 32)
	if err != nil {
		return codes.Unknown, "", fmt.Errorf("answer without a valid grpc-status (%q)", st)
	}
	if decoded, err := url.PathUnescape(m); err == nil {
		m = decoded
	}
	return codes.Code(code), m, nil
}

// encodeGRPCTimeout renders d in the grpc-timeout header format: at most 8
// digits and a unit.
func encodeGRPCTimeout(d time.Duration) string {
	if ms := d.Milliseconds(); ms > 0 && ms < 1e8 {
		return strconv.FormatInt(ms, 10) + "m"
	}
	return strconv.FormatInt(max(int64(d/time.Second), 1), 10) + "S"
}
