package ddb

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Unavailable reports whether err means DynamoDB did not answer the request:
// throttling, a 5xx, a network failure, exhausted retries or a deadline.
// Validation errors and missing tables are not: they are bugs or
// misconfiguration and must surface.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var maxAttempts *retry.MaxAttemptsError
	if errors.As(err, &maxAttempts) {
		return true
	}
	var (
		throughput *types.ProvisionedThroughputExceededException
		reqLimit   *types.RequestLimitExceeded
		internal   *types.InternalServerError
	)
	if errors.As(err, &throughput) || errors.As(err, &reqLimit) || errors.As(err, &internal) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException", "ServiceUnavailable", "TransactionConflictException",
			"TransactionInProgressException", "LimitExceededException":
			return true
		}
	}
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// ConditionFailed reports whether err is a failed condition of a single-item
// write (not a transaction).
func ConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Throttled reports whether err is DynamoDB's throttling (a partition's or
// the account's throughput exceeded), after the SDK's retries.
func Throttled(err error) bool {
	var (
		throughput *types.ProvisionedThroughputExceededException
		reqLimit   *types.RequestLimitExceeded
	)
	if errors.As(err, &throughput) || errors.As(err, &reqLimit) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ThrottlingException"
}
