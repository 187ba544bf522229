// Package s3log is the s3 callback (LiteLLM's S3 logger, also "s3_v2"):
// one object per call in LiteLLM's layout,
//
//	<s3_path>/<YYYY-MM-DD>/time-<HH-MM-SS-ffffff>_<call id>.json
//
// (the date and time of the call's start, UTC), holding LiteLLM's
// StandardLoggingPayload (callbacks.Payload), so that Athena or other
// queries written for LiteLLM's bucket keep working. The key comes from
// the call alone: a redelivered batch overwrites its objects rather than
// adding copies. Settings: s3_callback_params (s3_bucket_name,
// s3_region_name, s3_endpoint_url, s3_aws_access_key_id,
// s3_aws_secret_access_key, s3_aws_session_token, s3_path); without
// credentials there, the function's own (its role). Through the AWS SDK's
// s3 client, so any S3-compatible endpoint works (with s3_endpoint_url,
// path-style addressing: MinIO, moto, R2).
package s3log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/callbacks"
)

// parallel bounds the PUTs in flight per batch.
const parallel = 16

// Sink writes to one bucket.
type Sink struct {
	client *s3.Client
	bucket string
	prefix string
}

// New is the callbacks.Factory.
func New(ctx context.Context, env callbacks.Env) (callbacks.Sink, error) {
	bucket := env.Var("s3_bucket_name", "")
	if bucket == "" {
		return nil, errors.New("s3_callback_params.s3_bucket_name is not set")
	}
	var cfg aws.Config
	if env.AWS != nil {
		cfg = env.AWS.Copy()
	} else {
		c, err := awsconf.LoadForClients(ctx)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if r := env.Var("s3_region_name", ""); r != "" {
		cfg.Region = r
	}
	if id, secret := env.Var("s3_aws_access_key_id", ""), env.Var("s3_aws_secret_access_key", ""); id != "" || secret != "" {
		if id == "" || secret == "" {
			return nil, errors.New("s3_callback_params: s3_aws_access_key_id and s3_aws_secret_access_key go together")
		}
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, env.Var("s3_aws_session_token", "")))
	}
	endpoint := env.Var("s3_endpoint_url", "")
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	return &Sink{client: client, bucket: bucket, prefix: env.Var("s3_path", "")}, nil
}

// Key returns the object key of a call (LiteLLM's get_s3_object_key with
// the call id as the file's id).
func Key(prefix string, r *callbacks.Record) string {
	t := r.Start.UTC()
	var b strings.Builder
	if p := strings.TrimRight(prefix, "/"); p != "" {
		b.WriteString(p + "/")
	}
	b.WriteString(t.Format("2006-01-02"))
	b.WriteString("/time-")
	b.WriteString(t.Format("15-04-05"))
	fmt.Fprintf(&b, "-%06d_", t.Nanosecond()/1000)
	b.WriteString(safe(r.CallID))
	b.WriteString(".json")
	return b.String()
}

// safe keeps a call id (a client may choose it) to characters that need
// no escaping in a key and cannot climb out of the prefix.
func safe(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, id)
}

// Send implements callbacks.Sink: one PutObject per call, up to parallel
// at once.
func (s *Sink) Send(ctx context.Context, recs []callbacks.Record) error {
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range recs {
		body, err := json.Marshal(callbacks.NewPayload(&recs[i]))
		if err != nil {
			return callbacks.Permanent(err)
		}
		key := Key(s.prefix, &recs[i])
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
				ContentType: aws.String("application/json"),
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("s3 put %s: %w", key, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d objects not written: %w", len(errs), len(recs), errs[0])
	}
	return nil
}
