package awsconf

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// SafeRequestBodies returns c (the SDK's default client when nil) sending
// each request body as a plain io.ReadCloser.
//
// The SDK wraps a request body in a closer with a WriteTo method and
// closes it as soon as the response head arrives; after that, WriteTo
// returns io.EOF, which io.Copy reports as an error. net/http's HTTP/1
// transport reads the body once more after writing it (to find a body
// longer than its Content-Length), on its own goroutine; when the request
// did not fit its write buffer, the server may answer before that read,
// the read then fails with io.EOF, and the transport closes the connection
// while the response is still being read: a Bedrock stream breaks with
// "use of closed network connection", a DynamoDB answer is lost. Read
// after close returns a plain end of file, which io.Copy takes as the end.
// (HTTP/2 reads bodies with Read; the gateway's own HTTP/1 client writes
// the request before it reads the answer.)
func SafeRequestBodies(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	return plainBodies{c}
}

type plainBodies struct{ c aws.HTTPClient }

func (p plainBodies) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return p.c.Do(req)
	}
	r := *req // the SDK keeps its own request and closes its body
	r.Body = plainBody{req.Body}
	return p.c.Do(&r)
}

// plainBody hides every method of a body but Read and Close.
type plainBody struct{ io.ReadCloser }
