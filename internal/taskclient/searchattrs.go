package taskclient

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/workflows"
)

// SearchAttributes are the custom attributes CodingTask keeps current and
// List reads.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	workflows.SearchAttrPhase:     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttrLanguage:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttrIteration: enumspb.INDEXED_VALUE_TYPE_INT,
	workflows.SearchAttrCostUSD:   enumspb.INDEXED_VALUE_TYPE_DOUBLE,
}

// EnsureSearchAttributes registers the custom search attributes where the
// server allows and reports whether all of them are now available. The
// worker calls it at start with its own connection.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) (bool, error) {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return false, fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) == 0 {
		return true, nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	if err != nil {
		return false, fmt.Errorf("add search attributes: %w", err)
	}
	return true, nil
}
