package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// BaseImage is the Debian minbase every offline image starts from, imported
// once from debootstrap: the layer all of them share.
const BaseImage = "autocoder/sandbox-base:bookworm"

// baseArg is the offline Dockerfile's build argument that names its base,
// for a builder whose base has another name.
const baseArg = "BASE"

// labelImage marks a sandbox image with its name under sandbox/images.
const labelImage = "autocoder.sandbox.image"

// ImageDir is the name of an image's folder under sandbox/images: the
// image's name without repository, "sandbox-" and tag
// ("autocoder/sandbox-node:2" is "node").
func ImageDir(image string) string {
	name := path.Base(image)
	if i := strings.LastIndex(name, ":"); i >= 0 {
		name = name[:i]
	}
	return strings.TrimPrefix(name, "sandbox-")
}

// imageDir is the folder of the profile's image under sandbox/images,
// whatever name the image was given.
func (p Profile) imageDir() string {
	if p.recipeImage != "" {
		return ImageDir(p.recipeImage)
	}
	return ImageDir(p.Image)
}

// Dockerfile is how p's image is built: from its recipe's official image
// (a registry serves it), or offline from BaseImage and Debian's packages.
// Both end alike, so a run behaves the same in either. The offline
// variant COPYs the recipe's HostDirs from a build context that holds each
// under hostDirContext(i).
func Dockerfile(p Profile, offline bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sandbox image %s, built %s.\n", p.Image, variantName(offline))
	b.WriteString("# Generated from its language's recipe (internal/lang): go test ./sandbox -run TestDockerfilesMatchRecipes -update\n")
	if offline {
		b.WriteString(offlineHead(p))
	} else {
		b.WriteString(registryHead(p))
	}
	b.WriteString(commonTail(p))
	return b.String()
}

func variantName(offline bool) string {
	if offline {
		return "offline from " + BaseImage
	}
	return "from a registry"
}

func registryHead(p Profile) string {
	head := "FROM " + p.Recipe.Base + "\n"
	if p.Recipe.BaseSetup != "" {
		head += runScript(p.Recipe.BaseSetup, "")
	}
	return head
}

// offlineHead installs the recipe's packages in one layer that keeps no
// apt lists or archives, then copies its host directories. Packages of
// another Debian release come from the base's mirror, which the base's
// sources name.
func offlineHead(p Profile) string {
	head := "ARG " + baseArg + "=" + BaseImage + "\nFROM $" + baseArg + "\n"
	if len(p.Recipe.Packages) > 0 {
		head += "RUN "
		install := "apt-get install -y --no-install-recommends "
		if s := p.Recipe.Suite; s != "" {
			list := "/etc/apt/sources.list.d/" + s + ".list"
			head += "sed -n 's/^deb \\([^ ]*\\) " + debianSuite + " main$/deb \\1 " + s + " main/p' /etc/apt/sources.list > " + list + " \\\n" +
				" && test -s " + list + " \\\n && "
			install += "-t " + s + " "
		}
		head += "apt-get update \\\n" +
			" && DEBIAN_FRONTEND=noninteractive " + install + strings.Join(p.Recipe.Packages, " ") + " \\\n" +
			" && apt-get clean \\\n" +
			" && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* /usr/share/info/*\n"
	}
	for i, d := range p.Recipe.HostDirs {
		head += "COPY " + hostDirContext(i) + " " + d.To + "\n"
	}
	return head
}

// hostDirContext is where the i-th host directory sits in an offline
// build's context.
func hostDirContext(i int) string { return "host" + strconv.Itoa(i) }

// commonTail gives the image the environment a run gets (so the caches
// Setup builds are hits), runs Setup, and makes the sandbox user's places.
func commonTail(p Profile) string {
	var b strings.Builder
	b.WriteString("ENV")
	for _, kv := range p.environ(imagePath) {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, " \\\n    %s=%s", k, quoteEnv(v))
	}
	b.WriteString("\n")
	if p.Recipe.Setup != "" {
		seed := ""
		if p.GoCache != "" {
			seed = "GOCACHE=" + p.GoCache
		}
		b.WriteString(runScript(p.Recipe.Setup, seed))
	}
	b.WriteString("RUN rm -rf /tmp/* /root/.cache && mkdir -p " + workDir + " && chmod 1777 " + workDir + " " + tmpDir + "\n")
	fmt.Fprintf(&b, "LABEL %s=%s\n", labelImage, p.imageDir())
	fmt.Fprintf(&b, "USER %d:%d\nWORKDIR %s\nCMD [\"/bin/sh\"]\n", sandboxUID, sandboxUID, workDir)
	return b.String()
}

// runScript is a RUN of a shell script of any lines, under sh -e with the
// extra variable assignment env (may be ""). A RUN line cannot hold a
// newline, so a longer script is written to a file line by line first.
func runScript(script, env string) string {
	script = strings.TrimSpace(script)
	prefix := ""
	if env != "" {
		prefix = env + " "
	}
	if !strings.Contains(script, "\n") {
		return "RUN " + prefix + "sh -ec " + quoteWord(script) + "\n"
	}
	var b strings.Builder
	b.WriteString("RUN printf '%s\\n'")
	for _, line := range strings.Split(script, "\n") {
		b.WriteString(" \\\n    " + quoteWord(line))
	}
	b.WriteString(" \\\n    > /tmp/setup.sh \\\n && " + prefix + "sh -e /tmp/setup.sh \\\n && rm -f /tmp/setup.sh\n")
	return b.String()
}

// quoteWord single-quotes s for sh.
func quoteWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// quoteEnv quotes an ENV value that holds what the Dockerfile parser
// would split or expand.
func quoteEnv(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\$") {
		return v
	}
	if v == "" {
		return `""`
	}
	return strconv.Quote(v)
}
