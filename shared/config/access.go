package config

import (
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Model access groups and regions: what a deployment's model_info and
// litellm_params say about who may call it and where it runs.

// accessGroups reads model_info.access_groups: the names a key, team or
// user may list in its models to reach this deployment's model group.
func (l *loader) accessGroups(p string, v *yaml.Node, d *Deployment) error {
	names, err := l.strList(p, v)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(d.AccessGroups, n) {
			d.AccessGroups = append(d.AccessGroups, n)
		}
	}
	return nil
}

// indexAccessGroups fills Config.AccessGroups once at load (access group ->
// the model groups whose deployments name it, in file order), so that the
// model-access check is a map lookup; nil when no deployment names one.
func (c *Config) indexAccessGroups() {
	for _, d := range c.Deployments {
		for _, ag := range d.AccessGroups {
			if c.AccessGroups == nil {
				c.AccessGroups = map[string][]string{}
			}
			if !slices.Contains(c.AccessGroups[ag], d.ModelName) {
				c.AccessGroups[ag] = append(c.AccessGroups[ag], d.ModelName)
			}
		}
	}
}

// deriveRegion sets d.Region, when litellm_params.region_name left it
// empty, from where the deployment runs, as LiteLLM infers it: a Bedrock
// deployment's aws_region_name ("eu-west-1" -> "eu", "us-east-1" -> "us"),
// an Azure deployment's api_base host (its resource name often names its
// Azure region: "my-swedencentral.openai.azure.com" -> "eu"). Unknown: "".
func deriveRegion(d *Deployment) {
	if d.Region != "" {
		return
	}
	switch d.Protocol {
	case ProtocolBedrock:
		switch r := strings.ToLower(d.AWS.Region); {
		case strings.HasPrefix(r, "eu-"):
			d.Region = "eu"
		case strings.HasPrefix(r, "us-"):
			d.Region = "us"
		}
	case ProtocolAzure:
		d.Region = azureRegion(d.APIBase)
	}
}

// Azure region names by the region kind they belong to: a host token that
// contains one of these names a region of that kind.
var (
	azureEU = []string{"europe", "sweden", "switzerland", "france", "germany", "norway", "poland", "italy", "spain", "uksouth", "ukwest"}
	azureUS = []string{"eastus", "westus", "centralus"} // also eastus2, northcentralus, westus3, ...
)

// azureRegion reads an Azure resource host's first label, token by token
// ('-' separated): "eu"/"uk" or an EU region name -> "eu"; "us" or a US
// region name -> "us"; else "".
func azureRegion(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	label, _, _ := strings.Cut(strings.ToLower(u.Hostname()), ".")
	for tok := range strings.SplitSeq(label, "-") {
		switch {
		case tok == "eu" || tok == "uk" || containsAny(tok, azureEU):
			return "eu"
		case tok == "us" || containsAny(tok, azureUS):
			return "us"
		}
	}
	return ""
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
