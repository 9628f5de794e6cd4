/** Sent in worker heartbeats. Keep in step with package.json. */
export const SDK_VERSION = "0.1.0";
