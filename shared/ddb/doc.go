// Package ddb holds what Sluice's DynamoDB stores share: building the client,
// counting DynamoDB calls per request, and classifying errors.
//
// # Client
//
// NewClient builds a *dynamodb.Client from an aws.Config. The endpoint comes
// only from the SDK's own AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_DYNAMODB handling
// (the aws.Config from shared/awsconf); this package has no endpoint code. The client:
//
//   - counts every DynamoDB operation in the CallCount carried by the
//     request's context (WithCallCount), so tests can assert how many
//     synchronous round trips a gateway request made;
//   - retries TransactionConflictException (a plain write racing a
//     transaction on the same item) like throttling, with the SDK's standard
//     bounded backoff;
//   - validates the CRC32 response checksum, except with ClientOptions.Emulator,
//     which turns the check off (DisableValidateResponseChecksum) for
//     DynamoDB Local. In AWS the check stays on: it is cheap and TLS does not
//     cover a proxy that rewrites bodies.
//
// Every call our stores make carries a deadline: the stores derive one from
// the caller's context and their own per-call timeout, whichever is sooner.
//
// # Errors
//
// Unavailable reports whether an error means DynamoDB could not answer
// (throttled, 5xx, network failure, deadline): the condition a fail-open or
// fail-closed policy decides. Condition failures are not errors of this kind;
// the stores turn them into their own answers.
package ddb
