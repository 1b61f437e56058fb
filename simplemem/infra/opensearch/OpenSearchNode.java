// A single OpenSearch 2.19 node started in-process from the Maven Central jars (there is no runnable
// distribution on Maven Central). Run as a single-file source program, Java 17:
//
//   java -Xms512m -Xmx512m -cp '<libs>/*' infra/opensearch/OpenSearchNode.java \
//       path.home=DIR path.data=DIR path.logs=DIR http.port=9200 transport.port=9300
//
// Every argument is a `key=value` node setting; the loopback/single-node defaults below apply unless an
// argument overrides them. The node's plugins are passed as classes to Node's protected constructor, which
// runs no bootstrap checks, no security manager and no jar-hell check. main() stays blocked until the JVM
// is asked to stop (SIGTERM/SIGINT); the shutdown hook then closes the node.

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

public class OpenSearchNode {

    static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class,
        CommonAnalysisPlugin.class,
        PainlessPlugin.class,
        ReindexPlugin.class,
        MapperExtrasPlugin.class
    );

    static final String LOG4J2_PROPERTIES = String.join("\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.console.ref = console",
        "");

    /** Node subclass only to reach the protected constructor that takes classpath plugins. */
    static final class EmbeddedNode extends Node {
        EmbeddedNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    static Settings settingsFrom(String[] args) {
        Settings.Builder builder = Settings.builder()
            .put("cluster.name", "simplemem")
            .put("node.name", "simplemem-node")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", "9200")
            .put("transport.port", "9300")
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", true);
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got: " + arg);
            }
            builder.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Settings settings = builder.build();
        if (settings.get("path.home") == null) {
            throw new IllegalArgumentException("path.home=DIR is required");
        }
        return settings;
    }

    public static void main(String[] args) throws Exception {
        // Netty must not set the available processors itself (OpenSearch sets it): as the launcher does.
        System.setProperty("opensearch.set.netty.runtime.available.processors", "false");
        Settings settings = settingsFrom(args);
        Path home = Path.of(settings.get("path.home"));
        Files.createDirectories(home.resolve("config"));
        Files.createDirectories(home.resolve("plugins"));
        Files.createDirectories(home.resolve("modules"));

        // Console (stdout) logging at INFO: the launcher sends stdout to the service's log file.
        Files.writeString(home.resolve("config").resolve("log4j2.properties"), LOG4J2_PROPERTIES);

        Environment environment =
            InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> settings.get("node.name"));
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(settings.get("node.name"));
        LogConfigurator.configure(environment);
        EmbeddedNode node = new EmbeddedNode(environment, PLUGINS);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "opensearch-node-shutdown"));

        node.start();
        System.out.println("OpenSearchNode: started, http.port=" + settings.get("http.port"));
        stopped.await();
    }
}
