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

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// rawClient makes unary gRPC calls over plain HTTP/2 (h2c), bypassing the
// gRPC client library. It exists for the deadline test (§10): a gRPC client
// gives up by itself when its deadline passes, so it cannot observe whether
// the driver honours the deadline it was sent. rawClient sends the deadline
// in the grpc-timeout header but waits longer, and measures when and how
// the driver ends the call: with a status, or with a stream reset.
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

// rawAnswer is how the driver ended one call: with a gRPC status, or with
// an HTTP/2 stream reset.
type rawAnswer struct {
	// code and message are the gRPC status the driver sent, unless reset.
	code    codes.Code
	message string
	// reset is set when the stream was reset (RST_STREAM) instead of ended
	// with a status; resetCode is the HTTP/2 error code of the reset.
	reset     bool
	resetCode http2.ErrCode
	// elapsed is the time from sending the request to the status or reset.
	elapsed time.Duration
}

// call sends req to fullMethod (e.g.
// "/machina.driver.v1alpha1.MachineService/CreateMachine") with deadline
// sent as grpc-timeout, waits up to wait for the answer, and returns how
// the driver ended the call. An error means the driver did not answer in
// time (errNoAnswer) or answered something that is neither a gRPC status
// nor a stream reset.
//
// A stream reset is reported as an answer, not an error: a gRPC server
// library may end an expired call with RST_STREAM(CANCEL) instead of (or
// racing) the handler's DEADLINE_EXCEEDED, as grpc-go's does, and a gRPC
// client turns that reset into a CANCELLED status. Whether a reset is
// acceptable depends on when it came, which only the caller can judge.
func (c *rawClient) call(fullMethod string, req proto.Message, deadline, wait time.Duration) (rawAnswer, error) {
	msg, err := proto.Marshal(req)
	if err != nil {
		return rawAnswer{}, err
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
		return rawAnswer{}, err
	}
	httpReq.Header.Set("Content-Type", "application/grpc")
	httpReq.Header.Set("TE", "trailers")
	httpReq.Header.Set("grpc-timeout", encodeGRPCTimeout(deadline))
	start := time.Now()
	// ended classifies a failed round trip or body read: the wait ran
	// out, the stream was reset, or the transport failed otherwise.
	ended := func(err error) (rawAnswer, error) {
		elapsed := time.Since(start)
		if ctx.Err() != nil {
			return rawAnswer{}, errNoAnswer
		}
		// net/http's HTTP/2 stream errors convert to x/net's type
		// through errors.As.
		var se http2.StreamError
		if errors.As(err, &se) {
			return rawAnswer{reset: true, resetCode: se.Code, elapsed: elapsed}, nil
		}
		return rawAnswer{}, err
	}
	resp, err := c.client.Do(httpReq)
	if err != nil {
		return ended(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return ended(err)
	}
	elapsed := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return rawAnswer{}, fmt.Errorf("HTTP status %s", resp.Status)
	}
	// A "trailers-only" answer carries the status in the headers.
	st, m := resp.Trailer.Get("grpc-status"), resp.Trailer.Get("grpc-message")
	if st == "" {
		st, m = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	code, err := strconv.ParseUint(st, 10, 32)
	if err != nil {
		return rawAnswer{}, fmt.Errorf("answer without a valid grpc-status (%q)", st)
	}
	if decoded, err := url.PathUnescape(m); err == nil {
		m = decoded
	}
	return rawAnswer{code: codes.Code(code), message: m, elapsed: elapsed}, nil
}

// encodeGRPCTimeout renders d in the grpc-timeout header format: at most 8
// digits and a unit. It rounds up, so that the driver's deadline is never
// earlier than the one the suite measures against.
func encodeGRPCTimeout(d time.Duration) string {
	if ms := (d + time.Millisecond - 1) / time.Millisecond; ms > 0 && ms < 1e8 {
		return strconv.FormatInt(int64(ms), 10) + "m"
	}
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10) + "S"
}
