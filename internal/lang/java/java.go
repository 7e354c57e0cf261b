// Package java is autocoder's knowledge of Java: JDK 17 with JUnit 5 and
// AssertJ from Debian's packages, tests compiled with javac and run by the
// JUnit console launcher, and the failure parser lessons are keyed by.
package java

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/policy"
)

// javaDir is where Debian installs the JUnit and AssertJ jars, in the
// image and on a host alike.
const javaDir = "/usr/share/java"

// toolScript defines the two steps every Java command shares, as shell
// functions. compile builds every .java file of the project (Maven's
// src/main/java and src/test/java, or a flat layout; not target/ or
// build/ output) into /tmp/classes, so the project directory is left as
// it was; launch runs the JUnit console launcher over them with its
// arguments. Maven is not used: offline, it resolves only the exact
// versions Debian ships, and a pom naming any other fails before a test
// runs, while javac and the launcher run the same tests whatever the pom
// says. Source names are quoted in javac's argument file so a space in
// one does not split it.
const toolScript = `J=` + javaDir + `
compile() {
	rm -rf /tmp/classes && mkdir -p /tmp/classes &&
	find . -path ./target -prune -o -path ./build -prune -o -name '.?*' -prune -o -name '*.java' -print | sed -e 's|^\./||' -e 's/.*/"&"/' | sort >/tmp/java-sources &&
	if [ ! -s /tmp/java-sources ]; then echo 'javac: no .java files in the project' >&2; return 1; fi &&
	javac -encoding UTF-8 -proc:none -d /tmp/classes -cp "$J/junit-platform-console-standalone.jar:$J/assertj-core.jar" @/tmp/java-sources
}
launch() {
	cp=/tmp/classes:$J/assertj-core.jar
	for d in src/main/resources src/test/resources; do if [ -d "$d" ]; then cp="$cp:$d"; fi; done
	exec java -jar "$J/junit-platform-console-standalone.jar" --class-path "$cp" --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii --fail-if-no-tests "$@"
}
`

// runAll runs every test class found, whatever its name (the launcher's
// default pattern would skip a class not named *Test or *Tests).
const runAll = `compile && launch --scan-class-path /tmp/classes --include-classname '.*'`

// runNamed runs the tests named by its arguments, each Class or
// Class#method. A class named without its package is looked up among the
// compiled classes, so the short names surefire and the model use work.
const runNamed = `compile || exit $?
n=$#
for t in "$@"; do
	c=${t%%#*}
	case $c in
	*.*) ;;
	*)
		f=$(cd /tmp/classes && find . -name "$c.class" | sort | head -n 1)
		if [ -n "$f" ]; then f=${f#./}; c=$(printf %s "${f%.class}" | tr / .); fi
		;;
	esac
	case $t in
	*'#'*) set -- "$@" --select-method "$c#${t#*#}" ;;
	*) set -- "$@" --select-class "$c" ;;
	esac
done
shift "$n"
launch "$@"`

// testCmd compiles and runs every test.
var testCmd = []string{"sh", "-c", toolScript + runAll}

// compileCmd compiles the code and its tests and runs nothing.
var compileCmd = []string{"sh", "-c", toolScript + "compile"}

// jvmOptions size the JVM for the sandbox's 1 GiB. The heap is fixed
// rather than a share of the container's memory: on the bwrap backend the
// JVM cannot see its cgroup and would size itself from the host's memory.
// The class space and code cache are reserved smaller because, where no
// cgroup limits memory, an address-space limit of 1 GiB stands in for
// it, and the JVM's default reservations alone exceed that. One GC thread
// and C1 only suit the short runs of unit tests; no perf data file is
// written to /tmp.
const jvmOptions = "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CompressedClassSpaceSize=128m -XX:ReservedCodeCacheSize=64m -XX:-UsePerfData"

// packages give JDK 17, JUnit 5 and AssertJ on Debian bookworm; both
// image builds install them.
var packages = []string{"openjdk-17-jdk-headless", "junit5", "libassertj-core-java"}

// Language returns Java.
func Language() lang.Language {
	return lang.Language{
		Name:  "java",
		Title: "Java",
		Detect: lang.Detect{
			Markers:  []string{"pom.xml", "build.gradle", "build.gradle.kts"},
			Commands: []string{"mvn", "java", "javac", "gradle"},
			Task:     `\bjava\b|\bjunit\b|\bmaven\b|spring`,
		},
		Tests: lang.Tests{
			Command:    testCmd,
			Describe:   "`javac`, then the JUnit 5 console launcher (AssertJ on the class path)",
			Named:      named,
			Compile:    compileCmd,
			IsTestFile: isTestFile,
		},
		Guide: `Language: Java 17 (OpenJDK). Tests use JUnit 5.9 (Jupiter: org.junit.jupiter.api.Test, Assertions) and AssertJ 3.14 (org.assertj.core.api.Assertions.assertThat); nothing else is on the class path and there is no network, so use the JDK's standard library only.
Use the Maven layout: code in src/main/java/<package path>/, tests in src/test/java/ in the same package, one test class per class under test, named <Class>Test, with @Test methods (package-private is fine). Resources go in src/main/resources or src/test/resources.
The tests run without Maven or Gradle: every .java file of the project is compiled together with javac, and the JUnit console launcher runs every class with @Test methods; a pom.xml is kept for people but not read (if you write one, declare junit-jupiter 5.9.2 and assertj-core 3.14.0 with test scope).
Name a test as Class#method (or Class for all its tests).`,
		Extensions: []string{".java"},
		Failure: lang.Failure{
			Parse:   parse,
			Digest:  digest,
			Failing: failing,
		},
		Policy: lang.Policy{LineRules: policy.Java},
		// Maven Central as Maven's super POM and Gradle's mavenCentral()
		// name it (https://repo.maven.apache.org/maven2).
		Deps: lang.Deps{Registries: []string{"repo.maven.apache.org"},
			Versions: lang.Versions{API: lang.VersionsMaven, URL: "https://repo.maven.apache.org/maven2"}},
		Sandbox: lang.Sandbox{
			Image: "autocoder/sandbox-java:1",
			Env: map[string]string{
				"JAVA_TOOL_OPTIONS": jvmOptions,
				// glibc reserves 64 MiB of address space per arena and
				// thread; under an address-space limit that adds up.
				"MALLOC_ARENA_MAX": "2",
			},
			Recipe: lang.Recipe{
				// Debian's own image, not eclipse-temurin (Ubuntu-based,
				// without Debian's junit5 and assertj packages): the
				// registry build then installs the same packages as the
				// offline one, so both have the same jars at the same
				// paths. The JDK's post-install step needs the man
				// directory the slim image leaves out.
				Base:      "debian:bookworm-slim",
				BaseSetup: "mkdir -p /usr/share/man/man1 && apt-get update && apt-get install -y --no-install-recommends " + strings.Join(packages, " ") + " && rm -rf /var/lib/apt/lists/*",
				Packages:  packages,
			},
			ToolchainDirs: slices.Concat(lang.DebianToolchainDirs, []string{javaDir}),
			Prewarm:       `printf 'class WarmTest { @org.junit.jupiter.api.Test void w() {} }\n' > WarmTest.java && (` + toolScript + runAll + `)`,
			HostCheck:     []string{"/bin/sh", "-c", "/usr/bin/javac -version && test -r " + javaDir + "/junit-platform-console-standalone.jar && test -r " + javaDir + "/assertj-core.jar"},
			Install:       "apt-get install " + strings.Join(packages, " "),
		},
	}
}

// testName is a test as the launcher selects it: a class, or a class and
// a method with its parameter types.
var testName = regexp.MustCompile(`^[\w$.]+(?:#[\w$]+(?:\([\w$.,\[\] ]*\))?)?$`)

// named runs the named tests: Class#method, Class, surefire's
// Class.method, or a test file's path. With no names, it only compiles.
func named(tests []string) ([]string, error) {
	if len(tests) == 0 {
		return compileCmd, nil
	}
	cmd := []string{"sh", "-c", toolScript + runNamed, "sh"}
	for _, t := range tests {
		sel := selector(t)
		if !testName.MatchString(sel) {
			return nil, fmt.Errorf("java: test name %q: want Class#method, Class or a .java file", t)
		}
		cmd = append(cmd, sel)
	}
	return cmd, nil
}

// sourceRoots are the directories a class's package path starts under.
var sourceRoots = []string{"src/test/java/", "src/main/java/"}

// selector turns a test's name into Class or Class#method. A file's path
// under a Maven source root gives its class's full name; elsewhere its
// base name, which the command looks up. A dotted name whose last part is
// lower case after an upper case one is surefire's Class.method.
func selector(t string) string {
	t = strings.TrimSpace(t)
	if strings.HasSuffix(t, ".java") {
		p := strings.TrimSuffix(path.Clean(t), ".java")
		for _, root := range sourceRoots {
			if _, after, ok := strings.Cut(p+"/", root); ok {
				return strings.ReplaceAll(strings.TrimSuffix(after, "/"), "/", ".")
			}
		}
		return path.Base(p)
	}
	if strings.Contains(t, "#") {
		return t
	}
	parts := strings.Split(t, ".")
	if n := len(parts); n >= 2 && startsLower(parts[n-1]) && !startsLower(parts[n-2]) {
		return strings.Join(parts[:n-1], ".") + "#" + parts[n-1]
	}
	return t
}

func startsLower(s string) bool { return s != "" && s[0] >= 'a' && s[0] <= 'z' }

// isTestFile is Maven's convention: anything under src/test (and the
// usual test directories), and Test*, *Test, *Tests, *TestCase classes.
func isTestFile(p string) bool {
	base := path.Base(p)
	if name, ok := strings.CutSuffix(base, ".java"); ok {
		if strings.HasPrefix(name, "Test") || strings.HasSuffix(name, "Test") || strings.HasSuffix(name, "Tests") || strings.HasSuffix(name, "TestCase") {
			return true
		}
	}
	return lang.UnderTestDir(p)
}
