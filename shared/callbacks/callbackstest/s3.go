package callbackstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/sluice-gw/sluice/test/sqslocal"
)

// Bucket is a new S3 bucket on moto (the SQS emulator serves S3 too),
// emptied and deleted when the test ends.
type Bucket struct {
	Name     string
	Endpoint string
	Client   *s3.Client
}

// NewBucket creates a bucket on the emulator (call sqslocal.Main from
// TestMain).
func NewBucket(t testing.TB) Bucket {
	t.Helper()
	cfg := sqslocal.Config(t)
	ep := sqslocal.Endpoint()
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(ep); o.UsePathStyle = true })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "sluice-cb-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if cfg.Region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(cfg.Region)}
	}
	if _, err := c.CreateBucket(ctx, in); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	bk := Bucket{Name: name, Endpoint: ep, Client: c}
	t.Cleanup(func() {
		for _, k := range bk.Keys(t) {
			_, _ = c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)})
		}
		_, _ = c.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return bk
}

// Keys lists the bucket's object keys, sorted.
func (b Bucket) Keys(t testing.TB) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(b.Client, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	sort.Strings(out)
	return out
}

// Object reads the JSON object at key.
func (b Bucket) Object(t testing.TB, key string) map[string]any {
	t.Helper()
	out, err := b.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	body, _ := io.ReadAll(out.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s is not JSON: %v: %s", key, err, body)
	}
	return m
}
