package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/cooldown/ddbcooldown"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
)

// coldResources are one run's tables, parameter, queue and key.
type coldResources struct {
	cfg       aws.Config
	ddbClient *dynamodb.Client
	ssmClient *ssm.Client
	sqsClient *sqs.Client
	names     tables.Names
	param     string // SSM parameter name
	queueURL  string
	secret    string // the virtual key
	hash      string
	rpm       int64
	o         coldOptions
	// the -secrets secret
	sm         *secretsmanager.Client
	secretName string
}

func awsCfg(ctx context.Context) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(coldRegion),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
}

func newColdResources(ctx context.Context, o coldOptions) (*coldResources, error) {
	cfg, err := awsCfg(ctx)
	if err != nil {
		return nil, err
	}
	suffix := randHex(4)
	r := &coldResources{
		cfg:    cfg,
		names:  tables.WithAffix("coldstart-", "-"+suffix),
		param:  "/sluice-coldstart-" + suffix + "/master-key",
		secret: "sk-coldstart-" + randHex(16),
		rpm:    5000, // one counter item (limits.ShardsFor splits only above 10,000)
		o:      o,
	}
	r.ddbClient = dynamodb.NewFromConfig(cfg, func(opt *dynamodb.Options) {
		opt.BaseEndpoint = aws.String(o.ddb)
		opt.DisableValidateResponseChecksum = true
	})
	r.ssmClient = ssm.NewFromConfig(cfg, func(opt *ssm.Options) { opt.BaseEndpoint = aws.String(o.sqs) })
	r.sqsClient = sqs.NewFromConfig(cfg, func(opt *sqs.Options) { opt.BaseEndpoint = aws.String(o.sqs) })
	r.hash = keys.HashSecret(r.secret)

	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := tables.Create(tctx, r.ddbClient, r.names); err != nil {
		return nil, fmt.Errorf("tables on %s: %w", o.ddb, err)
	}
	if _, err := r.ssmClient.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(r.param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String("sk-coldstart-master-" + randHex(8)),
	}); err != nil {
		r.cleanup()
		return nil, fmt.Errorf("ssm parameter on %s: %w", o.sqs, err)
	}
	q, err := r.sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("sluice-coldstart-" + suffix)})
	if err != nil {
		r.cleanup()
		return nil, fmt.Errorf("sqs queue on %s: %w", o.sqs, err)
	}
	r.queueURL = aws.ToString(q.QueueUrl)
	if err := ddbkeys.New(r.ddbClient, r.names.Keys, ddbkeys.Options{}).CreateKey(ctx, keys.Key{
		Hash: r.hash, Alias: "coldstart", CreatedAt: time.Now(), Settings: keys.Settings{RPMLimit: r.rpm},
	}); err != nil {
		r.cleanup()
		return nil, fmt.Errorf("virtual key: %w", err)
	}
	return r, nil
}

// secretsConfig puts the deployments' api_key in a Secrets Manager secret
// and returns config reading them from it (-secrets).
func (r *coldResources) secretsConfig(ctx context.Context, config string) (string, error) {
	sm := secretsmanager.NewFromConfig(r.cfg, func(opt *secretsmanager.Options) { opt.BaseEndpoint = aws.String(r.o.sqs) })
	name := "sluice-coldstart/providers-" + randHex(4)
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(name), SecretString: aws.String(`{"PROVIDER_API_KEY":"dummy"}`),
	}); err != nil {
		return "", fmt.Errorf("secret on %s: %w", r.o.sqs, err)
	}
	r.secretName = name
	r.sm = sm
	return strings.ReplaceAll(config, "api_key: dummy", "api_key: os.environ/PROVIDER_API_KEY") +
		"general_settings:\n  key_management_system: aws_secret_manager\n  key_management_settings: {primary_secret_name: " + name + "}\n", nil
}

// cleanup deletes what newColdResources created (best effort).
func (r *coldResources) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.sm != nil {
		_, _ = r.sm.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String(r.secretName), ForceDeleteWithoutRecovery: aws.Bool(true)})
	}
	for _, t := range []string{r.names.Keys, r.names.Counters, r.names.Spend} {
		_, _ = r.ddbClient.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
	}
	_, _ = r.ssmClient.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(r.param)})
	if r.queueURL != "" {
		_, _ = r.sqsClient.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(r.queueURL)})
	}
}

// env is what Lambda sets for the gateway function (provided.al2023, as
// test/stack lists it) plus the template's environment, with each service's
// endpoint on its emulator and tracing on. Nothing of this process's
// environment reaches the bootstrap.
func (r *coldResources) env(runtimeAPI, task string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
		"LAMBDA_TASK_ROOT=" + task,
		"LAMBDA_RUNTIME_DIR=" + task,
		"_HANDLER=bootstrap",
		"AWS_REGION=" + coldRegion,
		"AWS_DEFAULT_REGION=" + coldRegion,
		"AWS_LAMBDA_FUNCTION_NAME=sluice-gateway",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/sluice-gateway",
		"AWS_LAMBDA_LOG_STREAM_NAME=2026/01/01/[$LATEST]" + randHex(16),
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAPI,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_SESSION_TOKEN=test",
		"AWS_ENDPOINT_URL_DYNAMODB=" + r.o.ddb,
		"AWS_ENDPOINT_URL_SSM=" + r.o.sqs,
		"AWS_ENDPOINT_URL_SQS=" + r.o.sqs,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + r.o.sqs,
		// The template's environment.
		"GATEWAY_CONFIG=config.yaml",
		"GATEWAY_STORE=dynamodb",
		"GATEWAY_MASTER_KEY_PARAMETER=" + r.param,
		"KEYS_TABLE=" + r.names.Keys,
		"COUNTERS_TABLE=" + r.names.Counters,
		"SPEND_TABLE=" + r.names.Spend,
		"SPEND_QUEUE_URL=" + r.queueURL,
		inittrace.EnvVar + "=1",
	}
}

// event is events/gateway-chat.json with the virtual key as its bearer.
func (r *coldResources) event(root string) []byte {
	b, err := os.ReadFile(filepath.Join(root, "events", "gateway-chat.json"))
	if err != nil {
		panic(err) // the repository's own file
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		panic(err)
	}
	ev["headers"].(map[string]any)["authorization"] = "Bearer " + r.secret
	out, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return out
}

// emulatorTimes times, from this process, the calls a cold start makes to
// the emulators and the upstream, each as the bootstrap makes it: on a new
// connection when it is the first call to its endpoint (SSM, the read-ahead's
// BatchGetItem, the upstream, SQS; moto and DynamoDB Local answer a new
// connection slower), else on a warm one (GetItem, UpdateItem). The median
// of 20 after 3 unmeasured.
func (r *coldResources) emulatorTimes(ctx context.Context, mockURL string) (map[string]time.Duration, error) {
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	freshDDB := dynamodb.NewFromConfig(r.cfg, func(opt *dynamodb.Options) {
		opt.BaseEndpoint = aws.String(r.o.ddb)
		opt.DisableValidateResponseChecksum = true
		opt.HTTPClient = fresh
	})
	cool := ddbcooldown.New(freshDDB, r.names.Counters, ddbcooldown.Options{})
	lim := ddblimits.New(r.ddbClient, r.names.Counters, ddblimits.Options{HoldsTable: r.names.Spend})
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	calls := map[string]func() error{
		"ssm": func() error {
			_, err := r.ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(r.param), WithDecryption: aws.Bool(true)},
				func(o *ssm.Options) { o.HTTPClient = fresh })
			return err
		},
		"GetItem": func() error {
			_, err := r.ddbClient.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.names.Keys),
				Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "key#" + r.hash}}, ConsistentRead: aws.Bool(true)})
			return err
		},
		"UpdateItem": func() error { // the admission's own call: one scope, one conditional UpdateItem
			_, err := lim.Admit(ctx, limits.AdmitRequest{Now: time.Now(), Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "emulator-" + r.hash[:8], RPM: 1 << 30}}})
			return err
		},
		"BatchGetItem": func() error { // the router's cooldown read
			_, err := cool.CoolingDown(ctx, []string{"emulator-" + r.hash[:8]}, time.Now())
			return err
		},
		"SendMessageBatch": func() error {
			_, err := r.sqsClient.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.queueURL),
				Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String(strings.Repeat("x", 600))}}},
				func(o *sqs.Options) { o.HTTPClient = fresh })
			return err
		},
		"upstream": func() error {
			resp, err := fresh.Post(mockURL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return err
		},
	}
	out := map[string]time.Duration{}
	for name, call := range calls {
		var ds []time.Duration
		for i := 0; i < 23; i++ {
			start := time.Now()
			if err := call(); err != nil {
				return nil, fmt.Errorf("emulator time of %s: %w", name, err)
			}
			if i >= 3 {
				ds = append(ds, time.Since(start))
			}
		}
		out[name] = medianDur(ds)
	}
	return out, nil
}
