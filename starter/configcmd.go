package starter

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	conf "github.com/autocoder/autocoder/internal/config"
)

// ConfigOptions are config show's and config check's arguments.
type ConfigOptions struct {
	JSON bool
	File string // config check's FILE
}

func NewCmdConfig(f *Factory, runF func(*ConfigOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or check the configuration (file < environment < flags)",
	}
	var show ConfigOptions
	showCmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration, each value with where it came from; secrets masked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(&show)
			}
			return showConfig(f, f.cfg.settings, show.JSON)
		},
	}
	showCmd.Flags().BoolVar(&show.JSON, "json", false, "print the configuration as JSON on stdout")
	var check ConfigOptions
	checkCmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Check a configuration file (default: the one in use); a mistake is named by file:line",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				check.File = args[0]
			}
			if runF != nil {
				return runF(&check)
			}
			s := f.cfg.settings
			if check.File != "" {
				var err error
				if s, err = conf.Load(conf.Options{File: check.File, Getenv: f.Getenv}); err != nil {
					return fmt.Errorf("%w: %v", errUsage, err)
				}
			}
			if s.File == "" {
				fmt.Fprintln(f.IO.Out, "no configuration file: the environment and the defaults apply")
				return nil
			}
			fmt.Fprintf(f.IO.Out, "%s: ok\n", s.File)
			return nil
		},
	}
	cmd.AddCommand(showCmd, checkCmd)
	return cmd
}

// shownSetting is one line of config show.
type shownSetting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Env    string `json:"env,omitempty"`
}

func showConfig(f *Factory, s *conf.Config, asJSON bool) error {
	var rows []shownSetting
	for _, k := range conf.Keys {
		v := s.Get(k.Name)
		text := v.Text
		if k.Secret && text != "" {
			text = conf.MaskedSecret
		}
		rows = append(rows, shownSetting{Key: k.Name, Value: text, Source: v.Source.String(), Env: k.Env})
	}
	for i, n := range s.FileNotifications() {
		rows = append(rows, shownSetting{Key: fmt.Sprintf("notifications[%d]", i), Value: n.Masked(), Source: n.Source.String()})
	}
	for i, m := range s.FileMCPServers() {
		rows = append(rows, shownSetting{Key: fmt.Sprintf("mcp_servers[%d]", i), Value: m.Masked(), Source: m.Source.String()})
	}
	for _, p := range s.FilePrices() {
		rows = append(rows, shownSetting{Key: fmt.Sprintf("prices.%q", p.Model), Value: p.Shown(), Source: p.Source.String()})
	}
	if asJSON {
		return writeJSON(f.IO.Out, map[string]any{"file": s.File, "settings": rows})
	}
	fmt.Fprintf(f.IO.Out, "file: %s\n\n", orDefault(s.File, "none"))
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Key, orDefault(r.Value, "-"), r.Source)
	}
	return tw.Flush()
}
