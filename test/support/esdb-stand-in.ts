import type * as grpc from '@grpc/grpc-js';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb.js';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb.js';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb.js';

/**
 * Adds to a stand-in gRPC server the features an EventStoreDB 24.10 node announces: Streams.Append,
 * Streams.BatchAppend (which the 6.x client then prefers for every append) and Streams.Read.
 */
export function announce24_10(server: grpc.Server): void {
  server.addService(ServerFeaturesService, {
    getSupportedMethods: (_call: unknown, callback: (e: null, r: SupportedMethods) => void) => {
      const methods = [StreamsService.append, StreamsService.batchAppend, StreamsService.read].map((m) => {
        const [, service, method] = m.path.split('/');
        return new SupportedMethod().setServiceName(service!.toLowerCase()).setMethodName(method!.toLowerCase());
      });
      callback(null, new SupportedMethods().setMethodsList(methods).setEventStoreServerVersion('24.10.0'));
    },
  } as never);
}
