package ddb

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// ClientOptions tune NewClient.
type ClientOptions struct {
	// Emulator turns off the CRC32 response checksum validation, which
	// DynamoDB Local does not support reliably. Leave it false against AWS.
	Emulator bool
	// MaxAttempts bounds the SDK's attempts per call (retries on throttling,
	// 5xx and transaction conflicts). Zero means 3.
	MaxAttempts int
	// OnUnavailable, if set, is called once for each operation that
	// failed because DynamoDB did not answer (Unavailable), after the
	// SDK's retries: the store-error metric. Condition failures are
	// answers, not counted.
	OnUnavailable func()
}

// NewClient returns a DynamoDB client for cfg that counts calls per context
// (see WithCallCount) and retries transaction conflicts.
func NewClient(cfg aws.Config, o ClientOptions) *dynamodb.Client {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 3
	}
	return dynamodb.NewFromConfig(cfg, func(opts *dynamodb.Options) {
		opts.DisableValidateResponseChecksum = o.Emulator
		opts.Retryer = retry.AddWithErrorCodes(
			retry.AddWithMaxAttempts(retry.NewStandard(), attempts),
			"TransactionConflictException",
		)
		opts.APIOptions = append(opts.APIOptions, AddCallCounter)
		if o.OnUnavailable != nil {
			opts.APIOptions = append(opts.APIOptions, addErrorCounter(o.OnUnavailable))
		}
	})
}

// addErrorCounter calls f for each operation that ends Unavailable.
func addErrorCounter(f func()) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("sluice.CountUnavailable",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if err != nil && Unavailable(err) {
					f()
				}
				return out, md, err
			}), middleware.Before)
	}
}

// CallCount counts the DynamoDB operations made with one context. A retried
// operation counts once; Attempts counts every HTTP attempt.
type CallCount struct {
	mu       sync.Mutex
	ops      []string
	attempts int
}

// Calls returns the number of operations counted.
func (c *CallCount) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ops)
}

// Attempts returns the number of HTTP attempts counted, retries included.
func (c *CallCount) Attempts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts
}

// Operations returns the names of the operations counted, in order.
func (c *CallCount) Operations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ops...)
}

// Reset sets the count back to zero.
func (c *CallCount) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops, c.attempts = nil, 0
}

type callCountKey struct{}

// WithCallCount returns a context whose DynamoDB calls are counted in the
// returned CallCount (by clients that carry AddCallCounter, as NewClient's do).
// Contexts derived from it share the count.
func WithCallCount(ctx context.Context) (context.Context, *CallCount) {
	c := &CallCount{}
	return context.WithValue(ctx, callCountKey{}, c), c
}

// CallCountFrom returns the CallCount in ctx, or nil.
func CallCountFrom(ctx context.Context) *CallCount {
	c, _ := ctx.Value(callCountKey{}).(*CallCount)
	return c
}

// AddCallCounter adds the call-counting middleware to a DynamoDB client's
// stack; use it in dynamodb.Options.APIOptions for clients not built by
// NewClient.
func AddCallCounter(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("sluice.CountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if c := CallCountFrom(ctx); c != nil {
				op := awsmiddleware.GetOperationName(ctx)
				c.mu.Lock()
				c.ops = append(c.ops, op)
				c.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("sluice.CountAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if c := CallCountFrom(ctx); c != nil {
				c.mu.Lock()
				c.attempts++
				c.mu.Unlock()
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}
