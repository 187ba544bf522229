package ssmparam_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/ssmparam"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.Main(m)) }

// putSecure stores a SecureString on moto (which checks no signature).
func putSecure(t *testing.T, endpoint, name, value string) {
	t.Helper()
	body := fmt.Sprintf(`{"Name":%q,"Value":%q,"Type":"SecureString","Overwrite":true}`, name, value)
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AmazonSSM.PutParameter")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=dummy/20260101/eu-west-3/ssm/aws4_request, SignedHeaders=host, Signature=x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PutParameter: HTTP %d", resp.StatusCode)
	}
}

// GetAll reads the master key and the salt key in one GetParameters call
// against SSM's wire protocol (moto); a missing name is an error naming it.
func TestGetAllOnMoto(t *testing.T) {
	sqslocal.Require(t)
	endpoint := sqslocal.Endpoint()
	prefix := fmt.Sprintf("/sluice-test/%d", time.Now().UnixNano())
	putSecure(t, endpoint, prefix+"/master", "sk-master-from-ssm")
	putSecure(t, endpoint, prefix+"/salt", "salt-from-ssm")
	c := client(t, endpoint)
	got, err := ssmparam.GetAll(context.Background(), c, prefix+"/master", prefix+"/salt")
	if err != nil || len(got) != 2 || got[0] != "sk-master-from-ssm" || got[1] != "salt-from-ssm" {
		t.Fatalf("GetAll = %q, %v", got, err)
	}
	_, err = ssmparam.GetAll(context.Background(), c, prefix+"/master", prefix+"/missing")
	if err == nil || !strings.Contains(err.Error(), prefix+"/missing") || strings.Contains(err.Error(), "sk-master") {
		t.Fatalf("a missing parameter: %v", err)
	}
}
