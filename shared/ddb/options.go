package ddb

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Options tune a store on one table (the stores' Options are this type).
type Options struct {
	Timeout time.Duration // per call, on top of the caller's deadline; 0: DefaultTimeout
}

// Table returns the table named name on client, each call bounded by o.
func (o Options) Table(client *dynamodb.Client, name string) Table {
	return NewTable(client, name, o.Timeout)
}
