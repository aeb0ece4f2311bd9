import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Aws, Duration, RemovalPolicy, Stack, Validations, type CfnResource } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import nag from 'cdk-nag';
import { Construct } from 'constructs';
import { dashboardVendorFiles } from './dashboard-vendor.ts';
import { projectRoot } from './fleetward-function.ts';

/** The dashboard's static files (plain ES modules, nothing is built); docs/dashboard.md. */
export const webDir = join(projectRoot, 'web');

/** The dashboard reads the API's URL from this file next to index.html (web/api.js, `apiBaseUrl`). */
export const DASHBOARD_CONFIG_FILE = 'config.json';

export interface SiteDashboardProps {
  siteName: string;
  logRetention: RetentionDays;
}

/**
 * The dashboard of one site: `web/` in a private bucket, served by a CloudFront distribution that
 * alone may read it (Origin Access Control), over HTTPS only. Built in two steps because the HTTP API needs the
 * distribution's origin for its CORS configuration before the files can name the API's URL:
 * `new SiteDashboard(...)`, then the API with `origin` allowed, then `deployFiles(apiUrl)`.
 */
export class SiteDashboard extends Construct {
  readonly bucket: Bucket;
  readonly logBucket: Bucket;
  readonly distribution: Distribution;
  /** `https://<distribution domain>`: the origin the HTTP API must allow, and where the dashboard is. */
  readonly origin: string;
  private deployment: BucketDeployment | undefined;
  /** BucketDeployment's Lambda function (a singleton of the stack, so not under this construct), once deployed. */
  deployHandler: LambdaFunction | undefined;
  private readonly props: SiteDashboardProps;

  constructor(scope: Construct, id: string, props: SiteDashboardProps) {
    super(scope, id);
    this.props = props;

    // Access logs of the bucket (S3 server access logs, `bucket/`) and of the distribution (CloudFront standard
    // logs, `cloudfront/`). CloudFront's standard logs are written with an ACL grant, hence object-writer
    // ownership; nothing in it is public.
    this.logBucket = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.OBJECT_WRITER,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // cdk-nag's S1 does not ask a log-target bucket for access logs of its own.

    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.logBucket,
      serverAccessLogsPrefix: 'bucket/',
      // Static files only, re-deployed by every `cdk deploy`; kept on stack delete like the rest of the data.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // The local runner's headers (local/dashboard.ts), except that the API is on another origin: API Gateway's
    // execute-api hosts of this region. Not this API's own host: the API's CORS names the distribution, so the
    // distribution cannot name the API without a dependency cycle.
    const headers = new ResponseHeadersPolicy(this, 'Headers', {
      comment: `Fleetward ${props.siteName} dashboard: security headers`,
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: [
            "default-src 'self'",
            `connect-src 'self' https://*.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`,
            "img-src 'self' data:",
            "frame-ancestors 'none'",
          ].join('; '),
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
      },
    });

    this.distribution = new Distribution(this, 'Distribution', {
      comment: `Fleetward ${props.siteName} dashboard`,
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        // The files are sent with `Cache-Control: no-cache`, so CloudFront keeps them for the policy's minimum
        // TTL (1 s): a deploy shows at once without an invalidation (which would need cloudfront:* on "*").
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
      },
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: 'cloudfront/',
    });
    this.origin = `https://${this.distribution.distributionDomainName}`;

    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR1',
      reason:
        'The dashboard is for the operators of this site wherever they are; it serves static files only, and every fleet datum ' +
        'it shows comes from the HTTP API behind the JWT authorizer (provider-admin), so a geo restriction would protect nothing.',
    });
    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR2',
      reason:
        'The distribution serves a handful of static, public-by-design files (no data, no secrets: config.json holds only the API URL); the data sits ' +
        "behind the API's JWT authorizer. A WAF web ACL (us-east-1 only, billed per rule) can be attached later with webAclId if a site wants one.",
    });
    Validations.of(this.distribution).acknowledge({
      id: 'AwsSolutions-CFR4',
      reason:
        'Without a custom domain the distribution uses the default *.cloudfront.net certificate, whose ' +
        'security policy CloudFront fixes (TLSv1); choosing TLSv1.2_2021 needs a custom domain with an ACM ' +
        'certificate, which the stack does not manage (docs/deploy.md). Browsers negotiate TLS 1.2/1.3 with it.',
    });
  }

  /** Writes `web/` into the bucket, with a `config.json` that names `apiUrl` (resolved at deploy time). */
  deployFiles(apiUrl: string): BucketDeployment {
    if (this.deployment) throw new Error('SiteDashboard: the files are deployed once');
    // Not the managed AWSLambdaBasicExecutionRole (it may write to every log group in the account): its own
    // log group, as the site's functions have.
    const logs = new LogGroup(this, 'DeployLogs', { retention: this.props.logRetention, removalPolicy: RemovalPolicy.RETAIN });
    const role = new Role(this, 'DeployRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Fleetward ${this.props.siteName}: copies the dashboard's files into its bucket at deploy time`,
    });
    role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logs.logGroupArn],
      }),
    );
    this.deployment = new BucketDeployment(this, 'Deployment', {
      destinationBucket: this.bucket,
      sources: [
        // The shipped config.json (`"apiUrl": ""`, same origin) is the local runner's; this site's is written below.
        // Type declarations (*.d.ts) only serve the type check.
        Source.asset(webDir, { exclude: [DASHBOARD_CONFIG_FILE, '**/*.d.ts'] }),
        Source.jsonData(DASHBOARD_CONFIG_FILE, { apiUrl }),
        ...Object.entries(dashboardVendorFiles).map(([key, file]) => Source.data(key, readFileSync(file, 'utf8'))),
      ],
      cacheControl: [CacheControl.noCache()],
      role,
      logGroup: logs,
    });
    // The deployment's Lambda is a singleton of the stack (outside this construct); its runtime and the S3
    // grants are aws-cdk-lib's. Acknowledged exactly, on that function and this role only.
    const handler = Stack.of(this)
      .node.children.filter((child): child is LambdaFunction => child instanceof LambdaFunction)
      .find((fn) => fn.role === role);
    if (!handler) throw new Error("SiteDashboard: no BucketDeployment handler with the dashboard's deploy role");
    this.deployHandler = handler;
    Validations.of(handler).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        `The runtime of aws-cdk-lib's BucketDeployment handler (${handler.runtime.name}) is chosen by aws-cdk-lib and not ` +
        `configurable; it runs only while CloudFormation deploys the dashboard's files, and moves on with aws-cdk-lib upgrades.`,
    });
    // The wildcards of BucketDeployment's grants (grantRead on the source assets, grantReadWrite on this bucket),
    // as cdk-nag's IAM5 names them: the asset bucket's ARN is literal once `cdk deploy` knows the account and
    // region, so the findings are read from the policy, each acknowledged with what it is for. An unknown one
    // (a new aws-cdk-lib granting more) stops synth here instead of being waved through.
    const policy = role.node.tryFindChild('DefaultPolicy')?.node.defaultChild as CfnResource | undefined;
    const findings = policy ? nag.rules.iam.IAMNoWildcardPermissions(policy) : [];
    const actions: Record<string, string> = {
      's3:GetBucket*': 'read the location and settings of the asset bucket and the dashboard bucket',
      's3:GetObject*': 'read the zipped sources from the asset bucket and the existing files for the sync',
      's3:List*': 'list both buckets for `aws s3 sync`',
      's3:DeleteObject*': 'prune from the dashboard bucket the files no longer in web/',
      's3:Abort*': 'abort failed multipart uploads into the dashboard bucket',
    };
    const ownObjects = `${this.logicalArnOf(this.bucket)}/*`;
    for (const finding of Array.isArray(findings) ? findings : []) {
      const kind = finding.slice(0, finding.indexOf('::'));
      const value = finding.slice(kind.length + 2);
      const what =
        kind === 'Action'
          ? actions[value]
          : value === ownObjects
            ? 'reach the objects of the dashboard bucket, which this deployment owns'
            : /^arn:(<AWS::Partition>|[a-z-]+):s3:::cdk-[a-z0-9]+-assets-[^/]+\/\*$/.test(value)
              ? 'read the objects of the CDK bootstrap asset bucket, where `cdk deploy` uploads web/ and config.json'
              : undefined;
      if (!what) throw new Error(`SiteDashboard: BucketDeployment grants an unexpected wildcard (${finding}); review it and say why`);
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[${finding}]`,
        reason:
          `aws-cdk-lib's BucketDeployment needs this to ${what}; the role is this deployment's alone ` +
          '(its handler runs only while CloudFormation deploys) and reaches no bucket but these two.',
      });
    }
    return this.deployment;
  }

  private logicalArnOf(bucket: Bucket): string {
    return `<${Stack.of(this).getLogicalId(bucket.node.defaultChild as never)}.Arn>`;
  }
}
