import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectPackage;

import java.io.PrintWriter;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs the GPU-related JUnit tests of PowerInfer4j (packages org.powerinfer4j.bindings, org.powerinfer4j.engine.gpu and org.powerinfer4j.engine.backend,
 * ArchitectureOnDeviceTest, and SequenceBatchTest's device passes)
 * without Maven, for machines that have a GPU but no build tools (see gpu-check.sh). Argument: a tag expression
 * ("gpu" for the GPU tests only) or "all". Prints one line per test and a summary; exit status 0 when tests ran and
 * none failed, 1 on failures, 3 when every test was skipped.
 */
public final class GpuCheck {
    public static void main(String[] args) {
        String tags = args.length > 0 ? args[0] : "gpu";
        LauncherDiscoveryRequestBuilder b = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectPackage("org.powerinfer4j.bindings"), selectPackage("org.powerinfer4j.engine.gpu"),
                        selectPackage("org.powerinfer4j.engine.backend"), selectClass("org.powerinfer4j.engine.model.ArchitectureOnDeviceTest"),
                        selectClass("org.powerinfer4j.engine.api.SequenceBatchTest"));
        if (!tags.equals("all")) b.filters(TagFilter.includeTags(tags));
        LauncherDiscoveryRequest request = b.build();
        PrintWriter out = new PrintWriter(System.out, true);
        TestExecutionListener lines = new TestExecutionListener() {
            @Override
            public void executionSkipped(TestIdentifier id, String reason) {
                out.println("SKIPPED " + name(id) + ": " + reason);
            }

            @Override
            public void executionFinished(TestIdentifier id, TestExecutionResult r) {
                if (!id.isTest() && r.getStatus() == TestExecutionResult.Status.SUCCESSFUL) return;
                String detail = r.getThrowable().map(t -> ": " + t).orElse("");
                out.println(r.getStatus() + " " + name(id) + detail);
            }

            private String name(TestIdentifier id) {
                String cls = id.getUniqueId().replaceAll(".*\\[class:([^\\]]*)\\].*", "$1");
                return cls.equals(id.getUniqueId()) ? id.getDisplayName() : cls.substring(cls.lastIndexOf('.') + 1) + "." + id.getDisplayName();
            }
        };
        SummaryGeneratingListener summary = new SummaryGeneratingListener();
        Launcher launcher = LauncherFactory.create();
        launcher.execute(request, summary, lines);
        TestExecutionSummary s = summary.getSummary();
        s.printTo(out);
        s.printFailuresTo(out, 30);
        out.flush();
        if (s.getTotalFailureCount() > 0) System.exit(1);
        if (s.getTestsSucceededCount() == 0) {
            out.println("gpu-check: no test ran (all skipped: is CUDA usable here?)");
            System.exit(3);
        }
        System.exit(0);
    }
}
