package dev.madeira;

/** The SDK's version, as sent in worker heartbeats. */
public final class Version {
    public static final String SDK_VERSION = "0.1.0";

    private Version() {
    }
}
