// Package callbacks is the logging-callback framework: LiteLLM's
// success_callback / failure_callback / callbacks (litellm_settings), run
// off the request path by the spend consumer.
//
// # Where sinks are called
//
// The gateway puts what a sink needs into each request's spend event
// (spend.Event: model, deployment, tokens, cost, latency, time to first
// token, status, error, key, team, user, end user, tags, and, only while
// content logging is on, the request's metadata, messages and response,
// each at most spend.MaxContentLen bytes: longer ones become a JSON string
// of their first bytes ending "...[truncated N bytes]"). The spend
// consumer (spend.Consumer) records a batch, then calls Dispatcher.Deliver
// with the batch's valid events (spend.Consumer.Sinks): in Lambda from the
// SQS handler (a delivery that still fails after the retries fails the
// batch, SQS redelivers it, recording again is a no-op, and the messages
// reach the dead-letter queue only after the queue's receive count); in
// local mode from the in-process queue's own goroutine. No sink is ever
// called while a client waits, and the gateway's Lambda bootstrap links
// no sink package (only functions/spend and local mode import
// shared/callbacks/sinks).
//
// # What a sink receives
//
// A Sink gets, once per consumer batch, the batch's Records (one per call)
// that its list selects: success_callback sinks the successful calls,
// failure_callback the failed ones (status failure or
// client_disconnected), callbacks both. A Record is the event as sinks
// see it, after the redaction settings: with turn_off_message_logging its
// Metadata, Messages and Response are nil; with redact_user_api_key_info
// its key hash, key alias, user and team ids are "". Usage and cost are
// always there. A redelivered batch is delivered again to every sink, so a
// sink uses Record.CallID as its record's id where its API allows
// (Langfuse's event and trace ids, S3's object key), and a duplicate
// overwrites rather than adds.
//
// # Configuring and registering a sink
//
// A sink is a Factory registered under its LiteLLM callback name in a
// Registry; shared/callbacks/sinks.All returns the registry of every sink
// (add a sink there, and its name to config.CallbackNames). New builds the
// Dispatcher from config.Callbacks (the names listed and the settings) and
// a Registry: each name listed builds one Sink through its Factory, with
// an Env carrying the environment (LANGFUSE_*, GENERIC_LOGGER_*, ...),
// the config's parameters for that sink (s3_callback_params), the AWS
// configuration and an HTTP client. A Factory returns an error when its
// settings are missing or wrong: New then fails, and the consumer does
// not start (better than a sink silently dropping every record).
//
// Team and key callbacks (LiteLLM's POST /team/{id}/callback and a key's
// metadata.logging: keys.LoggingCallbacks) add sinks per call: Options.Scopes
// (KeyScopes on the keys store, cached a minute) reads the key's callbacks,
// else its team's, and each is built through the same Registry with its
// callback_vars as Env.Params (a secret there is never logged).
package callbacks
