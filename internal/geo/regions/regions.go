// Package regions places the public clouds' regions (Amazon Web Services,
// Google Cloud, Microsoft Azure) on the map, so that a member cluster that
// names its region, as every managed Kubernetes cluster's nodes do in
// topology.kubernetes.io/region, has a location without anyone giving it one.
//
// Each region is at the city its provider publishes for it (Google Cloud and
// Azure name a city or metro area; where AWS names only a state or country,
// its largest metro area there), to two decimals (about 1 km): enough to
// order clusters by distance, and no claim of where a data centre stands.
// Region names of the three providers do not overlap (us-east1, us-east-1,
// eastus), so one table holds them all.
package regions

import "github.com/kfed-io/kfed/internal/geo"

// Region is one cloud region and where it is.
type Region struct {
	Name     string
	Provider string // "aws", "gcp" or "azure"
	City     string
	geo.Point
}

// Lookup returns where the region called name is, and false for a name the
// table does not have.
func Lookup(name string) (geo.Point, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r.Point, true
		}
	}
	return geo.Point{}, false
}

// All returns every region of the table, a new slice for each call: callers
// may keep or change it. It is long because it is the table, one line a
// region.
func All() []Region {
	return []Region{
		// Google Cloud (cloud.google.com/about/locations).
		gcp("us-east1", "Moncks Corner, South Carolina", 33.20, -80.01),
		gcp("us-east4", "Ashburn, Virginia", 39.04, -77.49),
		gcp("us-east5", "Columbus, Ohio", 39.96, -83.00),
		gcp("us-central1", "Council Bluffs, Iowa", 41.26, -95.86),
		gcp("us-south1", "Dallas, Texas", 32.78, -96.80),
		gcp("us-west1", "The Dalles, Oregon", 45.59, -121.18),
		gcp("us-west2", "Los Angeles", 34.05, -118.24),
		gcp("us-west3", "Salt Lake City", 40.76, -111.89),
		gcp("us-west4", "Las Vegas", 36.17, -115.14),
		gcp("northamerica-northeast1", "Montréal", 45.50, -73.57),
		gcp("northamerica-northeast2", "Toronto", 43.65, -79.38),
		gcp("northamerica-south1", "Querétaro", 20.59, -100.39),
		gcp("southamerica-east1", "São Paulo", -23.55, -46.63),
		gcp("southamerica-west1", "Santiago", -33.45, -70.67),
		gcp("europe-west1", "St. Ghislain, Belgium", 50.45, 3.82),
		gcp("europe-west2", "London", 51.51, -0.13),
		gcp("europe-west3", "Frankfurt", 50.11, 8.68),
		gcp("europe-west4", "Eemshaven, Netherlands", 53.44, 6.83),
		gcp("europe-west6", "Zurich", 47.38, 8.54),
		gcp("europe-west8", "Milan", 45.46, 9.19),
		gcp("europe-west9", "Paris", 48.86, 2.35),
		gcp("europe-west10", "Berlin", 52.52, 13.40),
		gcp("europe-west12", "Turin", 45.07, 7.69),
		gcp("europe-north1", "Hamina, Finland", 60.57, 27.20),
		gcp("europe-north2", "Stockholm", 59.33, 18.07),
		gcp("europe-central2", "Warsaw", 52.23, 21.01),
		gcp("europe-southwest1", "Madrid", 40.42, -3.70),
		gcp("me-west1", "Tel Aviv", 32.09, 34.78),
		gcp("me-central1", "Doha", 25.29, 51.53),
		gcp("me-central2", "Dammam", 26.43, 50.10),
		gcp("africa-south1", "Johannesburg", -26.20, 28.05),
		gcp("asia-east1", "Changhua County, Taiwan", 24.08, 120.54),
		gcp("asia-east2", "Hong Kong", 22.32, 114.17),
		gcp("asia-northeast1", "Tokyo", 35.68, 139.69),
		gcp("asia-northeast2", "Osaka", 34.69, 135.50),
		gcp("asia-northeast3", "Seoul", 37.57, 126.98),
		gcp("asia-south1", "Mumbai", 19.08, 72.88),
		gcp("asia-south2", "Delhi", 28.61, 77.21),
		gcp("asia-southeast1", "Jurong West, Singapore", 1.34, 103.71),
		gcp("asia-southeast2", "Jakarta", -6.21, 106.85),
		gcp("australia-southeast1", "Sydney", -33.87, 151.21),
		gcp("australia-southeast2", "Melbourne", -37.81, 144.96),

		// Amazon Web Services (aws.amazon.com/about-aws/global-infrastructure/regions_az).
		aws("us-east-1", "Northern Virginia (Ashburn)", 39.04, -77.49),
		aws("us-east-2", "Ohio (Columbus)", 39.96, -83.00),
		aws("us-west-1", "Northern California (San Francisco)", 37.77, -122.42),
		aws("us-west-2", "Oregon (Portland)", 45.52, -122.68),
		aws("us-gov-east-1", "GovCloud US-East (Columbus)", 39.96, -83.00),
		aws("us-gov-west-1", "GovCloud US-West (Portland)", 45.52, -122.68),
		aws("ca-central-1", "Canada (Montréal)", 45.50, -73.57),
		aws("ca-west-1", "Calgary", 51.05, -114.07),
		aws("mx-central-1", "Mexico (Querétaro)", 20.59, -100.39),
		aws("sa-east-1", "São Paulo", -23.55, -46.63),
		aws("eu-west-1", "Ireland (Dublin)", 53.35, -6.26),
		aws("eu-west-2", "London", 51.51, -0.13),
		aws("eu-west-3", "Paris", 48.86, 2.35),
		aws("eu-central-1", "Frankfurt", 50.11, 8.68),
		aws("eu-central-2", "Zurich", 47.38, 8.54),
		aws("eu-south-1", "Milan", 45.46, 9.19),
		aws("eu-south-2", "Spain (Zaragoza)", 41.65, -0.89),
		aws("eu-north-1", "Stockholm", 59.33, 18.07),
		aws("il-central-1", "Tel Aviv", 32.09, 34.78),
		aws("me-south-1", "Bahrain (Manama)", 26.23, 50.59),
		aws("me-central-1", "UAE (Abu Dhabi)", 24.45, 54.38),
		aws("af-south-1", "Cape Town", -33.92, 18.42),
		aws("ap-east-1", "Hong Kong", 22.32, 114.17),
		aws("ap-east-2", "Taipei", 25.03, 121.57),
		aws("ap-south-1", "Mumbai", 19.08, 72.88),
		aws("ap-south-2", "Hyderabad", 17.39, 78.49),
		aws("ap-northeast-1", "Tokyo", 35.68, 139.69),
		aws("ap-northeast-2", "Seoul", 37.57, 126.98),
		aws("ap-northeast-3", "Osaka", 34.69, 135.50),
		aws("ap-southeast-1", "Singapore", 1.35, 103.82),
		aws("ap-southeast-2", "Sydney", -33.87, 151.21),
		aws("ap-southeast-3", "Jakarta", -6.21, 106.85),
		aws("ap-southeast-4", "Melbourne", -37.81, 144.96),
		aws("ap-southeast-5", "Malaysia (Kuala Lumpur)", 3.14, 101.69),
		aws("ap-southeast-6", "New Zealand (Auckland)", -36.85, 174.76),
		aws("ap-southeast-7", "Thailand (Bangkok)", 13.76, 100.50),

		// Microsoft Azure (the regions' published coordinates, rounded).
		azure("eastus", "Virginia", 37.37, -79.82),
		azure("eastus2", "Virginia", 36.67, -78.39),
		azure("centralus", "Iowa", 41.59, -93.62),
		azure("northcentralus", "Illinois", 41.88, -87.63),
		azure("southcentralus", "Texas", 29.42, -98.50),
		azure("westcentralus", "Wyoming", 40.89, -110.23),
		azure("westus", "California", 37.78, -122.42),
		azure("westus2", "Washington", 47.23, -119.85),
		azure("westus3", "Phoenix", 33.45, -112.07),
		azure("canadacentral", "Toronto", 43.65, -79.38),
		azure("canadaeast", "Quebec City", 46.82, -71.22),
		azure("mexicocentral", "Querétaro", 20.59, -100.39),
		azure("brazilsouth", "São Paulo State", -23.55, -46.63),
		azure("northeurope", "Ireland", 53.35, -6.26),
		azure("westeurope", "Netherlands", 52.37, 4.90),
		azure("uksouth", "London", 50.94, -0.80),
		azure("ukwest", "Cardiff", 53.43, -3.08),
		azure("francecentral", "Paris", 46.38, 2.37),
		azure("germanywestcentral", "Frankfurt", 50.11, 8.68),
		azure("switzerlandnorth", "Zurich", 47.45, 8.56),
		azure("norwayeast", "Oslo", 59.91, 10.75),
		azure("swedencentral", "Gävle", 60.67, 17.14),
		azure("polandcentral", "Warsaw", 52.23, 21.02),
		azure("italynorth", "Milan", 45.47, 9.18),
		azure("spaincentral", "Madrid", 40.43, -3.42),
		azure("israelcentral", "Israel", 31.27, 33.45),
		azure("qatarcentral", "Doha", 25.55, 51.44),
		azure("uaenorth", "Dubai", 25.27, 55.32),
		azure("southafricanorth", "Johannesburg", -25.73, 28.22),
		azure("eastasia", "Hong Kong", 22.27, 114.19),
		azure("southeastasia", "Singapore", 1.28, 103.83),
		azure("japaneast", "Tokyo, Saitama", 35.68, 139.77),
		azure("japanwest", "Osaka", 34.69, 135.50),
		azure("koreacentral", "Seoul", 37.57, 126.98),
		azure("koreasouth", "Busan", 35.18, 129.08),
		azure("centralindia", "Pune", 18.58, 73.92),
		azure("southindia", "Chennai", 12.98, 80.16),
		azure("westindia", "Mumbai", 19.09, 72.87),
		azure("australiaeast", "New South Wales", -33.86, 151.21),
		azure("australiasoutheast", "Victoria", -37.81, 144.96),
		azure("australiacentral", "Canberra", -35.31, 149.12),
	}
}

func gcp(name, city string, lat, lon float64) Region {
	return Region{Name: name, Provider: "gcp", City: city, Point: geo.Point{Latitude: lat, Longitude: lon}}
}

func aws(name, city string, lat, lon float64) Region {
	return Region{Name: name, Provider: "aws", City: city, Point: geo.Point{Latitude: lat, Longitude: lon}}
}

func azure(name, city string, lat, lon float64) Region {
	return Region{Name: name, Provider: "azure", City: city, Point: geo.Point{Latitude: lat, Longitude: lon}}
}
